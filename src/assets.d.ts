// Module shapes of the assets Bun embeds with `with { type: "file" | "text" }`.
declare module "swagger-ui-dist/*" {
  const path: string;
  export default path;
}
declare module "*/init.js" {
  const text: string;
  export default text;
}
declare module "*.sh" {
  const text: string;
  export default text;
}
