import { describe, expect, test } from "bun:test";
import { parse as parseYaml } from "yaml";
import { adaptCompose, listBundleMounts } from "../../src/deploy/adapt-compose.ts";
import { COMPOSE, FILES } from "./fixtures.ts";
import { generateBundle } from "../../src/core/generate/index.ts";
import { getCatalog } from "../../src/catalog/index.ts";

describe("adaptCompose", () => {
  test("host ports become expose, in every syntax", () => {
    const yaml = `services:
  web:
    image: nginx
    expose: ["8080"]
    ports:
      - "80:80"
      - "127.0.0.1:8443:443"
      - "\${DNS_PORT:-53}:53/udp"
      - "[::1]:9000:9000/tcp"
      - 3000
      - target: 8080
        published: 18080
        protocol: tcp
      - "7000-7002:7000-7002"
`;
    const { yaml: out, changes } = adaptCompose(yaml);
    const web = parseYaml(out).services.web;
    expect(web.ports).toBeUndefined();
    expect(web.expose).toEqual(["8080", "80", "443", "53/udp", "9000", "3000", "7000-7002"]);
    expect(changes[0]).toContain('service "web": removed host port bindings 80:80, 127.0.0.1:8443:443');
    // A service the catalog does not know: only its UDP port is known not to be HTTP.
    expect(changes.slice(1)).toEqual(['service "web": the platform\'s proxy carries only HTTP(S) to a domain, so clients cannot reach ${DNS_PORT:-53}:53/udp, which is not TCP, until you publish it in the platform and open it on its server']);
  });

  test("ports the platform's proxy cannot carry are named from the catalog: UDP always, TCP that is not the web port unless HTTP; loopback ones never", () => {
    const bundle = generateBundle({ projectName: "media", services: ["livekit", "redis", "headscale"] }, getCatalog());
    const { changes } = adaptCompose(bundle.files["docker-compose.yml"]!, bundle.files, getCatalog());
    const warnings = changes.filter((c) => c.includes("cannot reach"));
    expect(warnings).toContain('service "livekit": the platform\'s proxy carries only HTTP(S) to a domain, so clients cannot reach 7882:7882/udp (WebRTC media over UDP (one muxed port)), which is not TCP, nor 7881:7881 (WebRTC over TCP) unless it speaks HTTP (not the service\'s web port), until you publish them in the platform and open them on its server');
    // Web ports (livekit 7880, headscale 8080) go through the proxy; redis is published on loopback only.
    expect(warnings.some((w) => /"(headscale|redis)"|7880/.test(w))).toBe(false);
  });

  test("services without ports or mounts are left alone, comments kept", () => {
    const yaml = "# keep me\nservices:\n  db:\n    image: postgres # inline\n    volumes:\n      - data:/var/lib/postgresql/data\nvolumes:\n  data: {}\n";
    const { yaml: out, changes } = adaptCompose(yaml);
    expect(changes).toEqual([]);
    expect(out).toContain("# keep me");
    expect(out).toContain("# inline");
    expect(parseYaml(out)).toEqual(parseYaml(yaml));
  });

  test("a fixed container_name (a hand edit) is removed and named: it would clash with another copy on the platform's server", () => {
    const { compose, changes } = adaptCompose("services:\n  app:\n    image: busybox\n    container_name: myapp\n  db:\n    image: postgres\n");
    expect((compose as { services: Record<string, Record<string, unknown>> }).services).toEqual({ app: { image: "busybox" }, db: { image: "postgres" } });
    expect(changes).toEqual(['service "app": removed container_name "myapp" (the platform names the containers; a fixed name clashes with another copy of the stack on its server)']);
  });

  test("on Coolify a one-shot job is left out of its health (exclude_from_hc), so a finished job does not mark the stack degraded; elsewhere the key is never added", () => {
    const text = generateBundle({ projectName: "jobs", services: ["flowise"] }, getCatalog()).files["docker-compose.yml"]!;
    const services = (yaml: unknown) => (yaml as { services: Record<string, Record<string, unknown>> }).services;
    const coolify = adaptCompose(text, {}, getCatalog(), "coolify");
    expect(services(coolify.compose)["flowise-data-owner"]!.exclude_from_hc).toBe(true);
    expect(Object.entries(services(coolify.compose)).filter(([, s]) => s.exclude_from_hc).map(([name]) => name)).toEqual(["flowise-data-owner"]);
    expect(coolify.changes).toContain('service "flowise-data-owner": exclude_from_hc set, Coolify\'s key for a one-shot job: it ends exited once done, which Coolify would show as the stack degraded');
    // Plain compose (Dokploy) refuses the key.
    for (const other of [adaptCompose(text, {}, getCatalog(), "dokploy"), adaptCompose(text, {}, getCatalog())]) {
      expect(Object.values(services(other.compose)).some((s) => "exclude_from_hc" in s)).toBe(false);
    }
  });

  test("bundle file mounts become inline configs with $ escaped; named volumes stay", () => {
    const { yaml: out, changes } = adaptCompose(COMPOSE, FILES);
    const doc = parseYaml(out);
    expect(doc.services.caddy.volumes).toEqual(["caddy_data:/data"]);
    expect(doc.services.caddy.configs).toEqual([{ source: "Caddyfile", target: "/etc/caddy/Caddyfile" }]);
    expect(doc.services.prometheus.volumes).toBeUndefined();
    expect(doc.services.prometheus.configs).toEqual([{ source: "prometheus_prometheus.yml", target: "/etc/prometheus/prometheus.yml" }]);
    // Compose turns $$ back into $: the container sees the file text exactly.
    expect(doc.configs.Caddyfile.content.replace(/\$\$/g, "$")).toBe(FILES.Caddyfile);
    expect(doc.configs["prometheus_prometheus.yml"].content).toBe(FILES["prometheus/prometheus.yml"]);
    expect(changes.filter((c) => c.includes("replaced by inline config"))).toHaveLength(2);
  });

  test("a mounted directory expands to one config per file below it", () => {
    const yaml = "services:\n  grafana:\n    image: grafana/grafana\n    volumes:\n      - ./grafana/provisioning:/etc/grafana/provisioning:ro\n";
    const files = {
      "grafana/provisioning/datasources/prom.yml": "apiVersion: 1\n",
      "./grafana/provisioning/dashboards/default.yml": "apiVersion: 1\nproviders: []\n",
      "grafana/other.txt": "not mounted",
    };
    const doc = parseYaml(adaptCompose(yaml, files).yaml);
    expect(doc.services.grafana.configs).toEqual([
      { source: "grafana_provisioning_dashboards_default.yml", target: "/etc/grafana/provisioning/dashboards/default.yml" },
      { source: "grafana_provisioning_datasources_prom.yml", target: "/etc/grafana/provisioning/datasources/prom.yml" },
    ]);
    expect(Object.keys(doc.configs)).toHaveLength(2);
  });

  test("a file mounted by two services becomes one config; existing configs are not overwritten", () => {
    const yaml = `services:
  a:
    image: x
    volumes: ["./shared.conf:/etc/a.conf"]
  b:
    image: y
    volumes:
      - type: bind
        source: ./shared.conf
        target: /etc/b.conf
configs:
  shared.conf:
    file: ./elsewhere.conf
`;
    const doc = parseYaml(adaptCompose(yaml, { "shared.conf": "x=1\n" }).yaml);
    expect(doc.configs["shared.conf"]).toEqual({ file: "./elsewhere.conf" });
    expect(doc.configs["shared.conf_2"]).toEqual({ content: "x=1\n" });
    expect(doc.services.a.configs[0].source).toBe("shared.conf_2");
    expect(doc.services.b.configs).toEqual([{ source: "shared.conf_2", target: "/etc/b.conf" }]);
  });

  test("mounts whose content is unknown (or outside the bundle) are kept and reported", () => {
    const yaml = "services:\n  a:\n    image: x\n    volumes:\n      - ./missing.conf:/etc/x.conf\n      - ../outside:/y\n      - /etc/hosts:/etc/hosts:ro\n";
    const { yaml: out, changes } = adaptCompose(yaml, {});
    expect(parseYaml(out).services.a.volumes).toEqual(["./missing.conf:/etc/x.conf", "../outside:/y", "/etc/hosts:/etc/hosts:ro"]);
    expect(changes).toEqual([
      'service "a": bind mount ./missing.conf kept as is; its content is not available, so the platform host will not have it',
      'service "a": bind mount ../outside kept as is; its content is not available, so the platform host will not have it',
    ]);
  });

  test("listBundleMounts names the relative sources the CLI must read", () => {
    expect(listBundleMounts(COMPOSE).sort()).toEqual(["Caddyfile", "prometheus/prometheus.yml"]);
  });

  test("invalid YAML is a usage error", () => {
    expect(() => adaptCompose("services: [unclosed")).toThrow("not valid YAML");
  });
});

describe("the bundle's reverse proxy on a platform", () => {
  for (const proxy of ["caddy", "traefik"] as const) {
    test(`${proxy} is left out with what depends on it, its volumes and its labels; the rest stays`, () => {
      const bundle = generateBundle({ projectName: "paas", services: ["n8n", "grafana"], proxy, domain: "example.com" }, getCatalog());
      const { yaml, changes } = adaptCompose(bundle.files["docker-compose.yml"]!, bundle.files);
      const doc = parseYaml(yaml);
      expect(Object.keys(doc.services).sort()).toEqual(["core", "grafana", "n8n", "postgresql", "prometheus"]);
      for (const service of Object.values(doc.services) as any[]) {
        expect(Object.keys(service.depends_on ?? {})).not.toContain(proxy);
        expect(Object.keys(service.labels ?? {}).filter((l) => l.startsWith("traefik."))).toEqual([]);
      }
      expect(Object.keys(doc.volumes).filter((v) => v.startsWith(proxy))).toEqual([]);
      expect(Object.keys(doc.volumes)).toContain("n8n-data");
      expect(changes[0]).toStartWith(`service "${proxy}" left out: the platform's own proxy routes to the services`);
      // The proxy's config file is not carried inline any more, nor its skill for the agent, nor
      // the gateway's address of it.
      expect(Object.keys(doc.configs ?? {}).some((c) => /^(caddyfile|traefik_)/i.test(c))).toBe(false);
      expect(Object.keys(doc.configs ?? {}).filter((c) => c.startsWith(`skills_${proxy}_`))).toEqual([]);
      expect(Object.keys(doc.configs ?? {})).toContain("skills_n8n_SKILL.md");
      expect(JSON.stringify(doc.services.core.environment)).not.toContain(`http://${proxy}:`);
      // Prometheus no longer scrapes it, and the skills index no longer lists it.
      const prometheus = parseYaml(doc.configs["prometheus_prometheus.yml"].content.replaceAll("$$", "$"));
      expect(prometheus.scrape_configs.map((j: { job_name: string }) => j.job_name)).not.toContain(proxy);
      expect(prometheus.scrape_configs.map((j: { job_name: string }) => j.job_name)).toContain("prometheus");
      expect(doc.configs["skills_README.md"].content).not.toContain(`(${proxy}/SKILL.md)`);
      expect(doc.configs["skills_README.md"].content).toContain("(n8n/SKILL.md)");
    });
  }

  test("our Traefik under another service name, with labels in list form: found by its label, its labels go", () => {
    const yaml = `services:
  edge:
    image: traefik:v3
    labels: ["dev.stackgen.service=traefik"]
  app:
    image: app
    labels: ["dev.stackgen.service=app", "traefik.enable=true"]
    depends_on: {edge: {condition: service_started}}
`;
    const doc = parseYaml(adaptCompose(yaml).yaml);
    expect(Object.keys(doc.services)).toEqual(["app"]);
    expect(doc.services.app.labels).toEqual(["dev.stackgen.service=app"]);
    expect(doc.services.app.depends_on).toBeUndefined();
  });

  test("a user's own service of that name, or Traefik labels without our Traefik, are theirs and stay", () => {
    const yaml = `services:
  caddy:
    image: caddy:2
  app:
    image: app
    labels: {traefik.enable: "true", traefik.http.routers.app.rule: "Host(\`app.example.com\`)"}
    depends_on: [caddy]
`;
    const doc = parseYaml(adaptCompose(yaml).yaml);
    expect(Object.keys(doc.services)).toEqual(["caddy", "app"]);
    expect(doc.services.app.labels["traefik.enable"]).toBe("true");
    expect(doc.services.app.depends_on).toEqual(["caddy"]);
  });
});
