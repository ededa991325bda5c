// A small client for the Docker Engine API: reading state, image digests, tags and volume
// contents. Lifecycle actions (up, stop, pull) go through `docker compose` (compose.ts).
import { failure, StackgenError, withoutUserPart } from "../errors.ts";

export interface EngineEndpoint {
  /** Unix socket path, when the engine listens on one. */
  socket?: string;
  /** Base URL for requests (http://localhost for a socket). */
  baseUrl: string;
  /** What the user configured, for messages. */
  display: string;
}

/** Parse DOCKER_HOST (unix:///path or tcp://host:port). */
export function parseDockerHost(value: string | undefined): EngineEndpoint {
  const host = value && value.trim() !== "" ? value.trim() : "unix:///var/run/docker.sock";
  const display = withoutUserPart(host);
  if (host.startsWith("unix://")) return { socket: host.slice("unix://".length), baseUrl: "http://localhost", display };
  if (host.startsWith("tcp://") || host.startsWith("http://")) {
    let url: URL;
    try {
      url = new URL(host.replace(/^tcp:/, "http:"));
    } catch {
      throw new StackgenError("USAGE_ERROR", `DOCKER_HOST "${display}" is not an address (use tcp://host:port).`, 400);
    }
    return { baseUrl: `http://${url.host}`, display };
  }
  throw new StackgenError("USAGE_ERROR", `DOCKER_HOST "${display}" is not supported (use unix:///path or tcp://host:port).`, 400);
}

export interface ContainerSummary {
  Id: string;
  Names: string[];
  Image: string;
  ImageID: string;
  State: string;
  Status: string;
  Labels: Record<string, string>;
  Ports: { IP?: string; PrivatePort: number; PublicPort?: number; Type: string }[];
  Mounts?: { Type: string; Name?: string; Destination: string }[];
  /** Unix seconds. */
  Created?: number;
}

export interface ContainerInspect {
  Id: string;
  Name: string;
  Image: string;
  Config: { Image: string; Labels: Record<string, string> | null };
  State: {
    Status: string;
    Running: boolean;
    ExitCode: number;
    StartedAt: string;
    FinishedAt: string;
    Health?: { Status: string; Log?: { Output: string; ExitCode: number }[] };
  };
  HostConfig?: { RestartPolicy?: { Name: string } };
  /** Restarts by the engine's restart policy since the container was created. */
  RestartCount?: number;
}

export interface ImageInspect {
  Id: string;
  RepoTags: string[] | null;
  RepoDigests: string[] | null;
}

export interface VolumeInspect {
  Name: string;
  Driver: string;
  Labels: Record<string, string> | null;
  Options: Record<string, string> | null;
}

/** The parts of `GET /info` that stackgen reads. */
export interface EngineInfo {
  ServerVersion?: string;
  /** Bytes of memory on the engine's host. */
  MemTotal?: number;
  /** Kernel architecture of the engine's host (x86_64, aarch64). */
  Architecture?: string;
  Runtimes?: Record<string, unknown>;
  /** Where the engine keeps images, containers and volumes, on its host. */
  DockerRootDir?: string;
  /** Registries it reaches without TLS (`insecure-registries`): by name, and address ranges. */
  RegistryConfig?: { IndexConfigs?: Record<string, { Secure?: boolean }>; InsecureRegistryCIDRs?: string[] };
}

export class EngineError extends StackgenError {
  constructor(
    message: string,
    readonly httpStatus: number,
  ) {
    super("DOCKER_ERROR", message, 500, undefined, 1);
  }
}

/** How a refused socket's message starts (doctor tells it apart from an engine that is down). */
export const SOCKET_FORBIDDEN = "Permission denied on the Docker engine's socket";

/** Why the engine could not be reached, with what to do: a socket this user may not open is the
 *  common case on a fresh install, and "is dockerd running?" would send them the wrong way. */
export function unreachableMessage(display: string, error: Pick<NodeJS.ErrnoException, "code" | "message">): string {
  if (error.code === "EACCES" || error.code === "EPERM") {
    return `${SOCKET_FORBIDDEN} ${display}: add your user to the group that owns it (usually docker: sudo usermod -aG docker $USER, then log in again), or run as root.`;
  }
  return `Cannot reach the Docker engine at ${display} (${UNREACHABLE_REASON[error.code ?? ""] ?? error.message}). Is dockerd running?`;
}

/** Our words for the common socket errors (the runtime's own add guesses such as "a typo in the url"). */
const UNREACHABLE_REASON: Record<string, string> = {
  ENOENT: "no socket there",
  ECONNREFUSED: "connection refused",
  ECONNRESET: "connection reset",
  ETIMEDOUT: "timed out",
  EHOSTUNREACH: "host unreachable",
  ENOTFOUND: "host name not found",
};

/** A container `docker compose run` made: not one of the project's services, and `down` leaves it. */
export const isOneOff = (c: ContainerSummary) => (c.Labels?.["com.docker.compose.oneoff"] ?? "False") === "True";

/** The label of the containers that mount volumes for a backup or restore (never started). */
const HELPER_LABEL = { "dev.stackgen.role": "volume-helper" };
/** One of those: stackgen's own, left behind when a second Ctrl-C quit before removing it. */
export const isVolumeHelper = (c: ContainerSummary) => c.Labels?.["dev.stackgen.role"] === HELPER_LABEL["dev.stackgen.role"];

export class Engine {
  constructor(readonly endpoint: EngineEndpoint = parseDockerHost(process.env.DOCKER_HOST)) {}

  private async request(method: string, path: string, init: { body?: BodyInit; headers?: Record<string, string> } = {}): Promise<Response> {
    const url = this.endpoint.baseUrl + path;
    try {
      return await fetch(url, {
        method,
        body: init.body,
        headers: init.headers,
        ...(this.endpoint.socket ? { unix: this.endpoint.socket } : {}),
      } as RequestInit);
    } catch (e) {
      throw failure("DOCKER_UNAVAILABLE", unreachableMessage(this.endpoint.display, e as NodeJS.ErrnoException));
    }
  }

  private async json<T>(method: string, path: string, body?: unknown, okStatuses: number[] = []): Promise<T> {
    const res = await this.request(method, path, body === undefined ? {} : { body: JSON.stringify(body), headers: { "Content-Type": "application/json" } });
    if (!res.ok && !okStatuses.includes(res.status)) throw await this.errorOf(res, `${method} ${path.split("?")[0]}`);
    const text = await res.text();
    return (text ? JSON.parse(text) : undefined) as T;
  }

  private async errorOf(res: Response, what: string): Promise<EngineError> {
    let message = "";
    try {
      message = ((await res.json()) as { message?: string }).message ?? "";
    } catch {
      /* not JSON */
    }
    return new EngineError(`Docker engine: ${what} failed (${res.status}${message ? `: ${message}` : ""})`, res.status);
  }

  async ping(): Promise<void> {
    const res = await this.request("GET", "/_ping");
    if (!res.ok) throw failure("DOCKER_UNAVAILABLE", `The Docker engine at ${this.endpoint.display} answered ${res.status} to a ping.`);
    await res.arrayBuffer();
  }

  info(): Promise<EngineInfo> {
    return this.json("GET", "/info");
  }

  /** Containers of a compose project, running or not, without one-off `run` containers. */
  async listProjectContainers(project: string): Promise<ContainerSummary[]> {
    const filters = encodeURIComponent(JSON.stringify({ label: [`com.docker.compose.project=${project}`] }));
    const all = await this.json<ContainerSummary[]>("GET", `/containers/json?all=true&filters=${filters}`);
    return all.filter((c) => !isOneOff(c));
  }

  /** Every container, running or not, that mounts the volume `name`. */
  containersUsingVolume(name: string): Promise<ContainerSummary[]> {
    const filters = encodeURIComponent(JSON.stringify({ volume: [name] }));
    return this.json<ContainerSummary[]>("GET", `/containers/json?all=true&filters=${filters}`);
  }

  inspectContainer(id: string): Promise<ContainerInspect> {
    return this.json("GET", `/containers/${encodeURIComponent(id)}/json`);
  }

  /** Freezes every process of a running container (the cgroup freezer): nothing it does moves on
   *  until unpause, and nothing of it is stopped or restarted. */
  async pauseContainer(id: string): Promise<void> {
    await this.json("POST", `/containers/${encodeURIComponent(id)}/pause`);
  }

  async unpauseContainer(id: string): Promise<void> {
    await this.json("POST", `/containers/${encodeURIComponent(id)}/unpause`);
  }

  /** Image by id or reference; undefined when it is not present locally. */
  async inspectImage(ref: string): Promise<ImageInspect | undefined> {
    const res = await this.request("GET", `/images/${encodeURIComponent(ref)}/json`);
    if (res.status === 404) {
      await res.arrayBuffer();
      return undefined;
    }
    if (!res.ok) throw await this.errorOf(res, "image inspect");
    return (await res.json()) as ImageInspect;
  }

  async listImages(): Promise<ImageInspect[]> {
    return this.json("GET", "/images/json");
  }

  /** Point `repo:tag` at an image id. */
  async tagImage(id: string, repo: string, tag: string): Promise<void> {
    await this.json("POST", `/images/${encodeURIComponent(id)}/tag?repo=${encodeURIComponent(repo)}&tag=${encodeURIComponent(tag)}`);
  }

  async removeImage(ref: string): Promise<void> {
    await this.json("DELETE", `/images/${encodeURIComponent(ref)}?noprune=true`, undefined, [404, 409]);
  }

  async inspectVolume(name: string): Promise<VolumeInspect | undefined> {
    const res = await this.request("GET", `/volumes/${encodeURIComponent(name)}`);
    if (res.status === 404) {
      await res.arrayBuffer();
      return undefined;
    }
    if (!res.ok) throw await this.errorOf(res, "volume inspect");
    return (await res.json()) as VolumeInspect;
  }

  async listProjectVolumes(project: string): Promise<VolumeInspect[]> {
    const filters = encodeURIComponent(JSON.stringify({ label: [`com.docker.compose.project=${project}`] }));
    const res = await this.json<{ Volumes: VolumeInspect[] | null }>("GET", `/volumes?filters=${filters}`);
    return res.Volumes ?? [];
  }

  async createVolume(spec: { Name: string; Driver?: string; DriverOpts?: Record<string, string>; Labels?: Record<string, string> }): Promise<void> {
    await this.json("POST", "/volumes/create", spec);
  }

  async removeVolume(name: string): Promise<void> {
    await this.json("DELETE", `/volumes/${encodeURIComponent(name)}`, undefined, [404]);
  }

  /**
   * Create (never start) a container that mounts the given volumes at /stackgen-volumes/<name>.
   * The archive endpoint reads and writes a created container's mounts, so the image needs no
   * shell or tools: any image the engine has locally will do.
   */
  async createVolumeHelper(image: string, volumes: string[]): Promise<string> {
    const created = await this.json<{ Id: string }>("POST", `/containers/create`, {
      Image: image,
      Entrypoint: ["/stackgen-volume-helper-never-started"],
      Cmd: [],
      Labels: HELPER_LABEL,
      NetworkDisabled: true,
      HostConfig: {
        NetworkMode: "none",
        Mounts: volumes.map((name) => ({
          Type: "volume",
          Source: name,
          Target: `${HELPER_ROOT}/${name}`,
          VolumeOptions: { NoCopy: true },
        })),
      },
    });
    return created.Id;
  }

  /** Removes a container with its anonymous volumes (`v=true`; named volumes are never removed
   *  so). A volume helper made from an image that declares `VOLUME` (postgres, redis) gets one of
   *  its own, which would otherwise be left behind at every backup and restore. */
  async removeContainer(id: string): Promise<void> {
    await this.json("DELETE", `/containers/${encodeURIComponent(id)}?force=true&v=true`, undefined, [404]);
  }

  /** A tar of `path` inside a container (the top folder is the path's last component), as it streams in. */
  async getArchive(containerId: string, path: string): Promise<ReadableStream<Uint8Array>> {
    const res = await this.request("GET", `/containers/${encodeURIComponent(containerId)}/archive?path=${encodeURIComponent(path)}`);
    if (!res.ok || !res.body) throw await this.errorOf(res, `reading ${path}`);
    return res.body;
  }

  /** Extract a tar (in memory, a file streamed from disk, or a stream of unknown length, sent
   *  chunked as `docker cp` sends its own) into `path` inside a container. */
  async putArchive(containerId: string, path: string, tar: Uint8Array | Blob | ReadableStream<Uint8Array>): Promise<void> {
    const res = await this.request("PUT", `/containers/${encodeURIComponent(containerId)}/archive?path=${encodeURIComponent(path)}`, {
      body: tar as Uint8Array<ArrayBuffer> | Blob | ReadableStream<Uint8Array>,
      headers: { "Content-Type": "application/x-tar" },
    });
    if (!res.ok) throw await this.errorOf(res, `writing ${path}`);
    await res.arrayBuffer();
  }
}

export const HELPER_ROOT = "/stackgen-volumes";

/** Pick a local image for the volume helper: one of `preferred` if present, else any local image. */
export async function helperImage(engine: Engine, preferred: string[]): Promise<string> {
  for (const ref of preferred) {
    const image = await engine.inspectImage(ref);
    if (image) return image.Id;
  }
  const any = await engine.listImages();
  if (any.length > 0) return any[0].Id;
  throw failure("NO_LOCAL_IMAGE", "No image is present locally to mount the volumes with; run `docker compose pull` first.");
}
