// The trivial program bench/run.ts compiles with `bun build --compile` as the baseline for the
// compiled binary's figures (start-up, memory, size): `serve <port>` answers /v1/health with a
// small JSON; anything else prints one line and exits.
const [command, port] = process.argv.slice(2);
if (command === "serve") {
  Bun.serve({
    port: Number(port),
    hostname: "127.0.0.1",
    fetch: () => new Response(JSON.stringify({ status: "ok" }), { headers: { "content-type": "application/json" } }),
  });
} else {
  process.stdout.write("baseline 0.0.0\n");
}
