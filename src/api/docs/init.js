// Interactive docs over the live OpenAPI document; every asset is served by the binary itself.
window.ui = SwaggerUIBundle({ url: "/v1/openapi.json", dom_id: "#swagger-ui", deepLinking: true, tryItOutEnabled: true });
