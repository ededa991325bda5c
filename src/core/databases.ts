// Which services are databases: a copy of their files taken while they write may be torn
// (`backup create --hot` names them), and recreating them under running clients (Watchtower)
// has no order or way back. Shared so both agree.

const DATABASE_CATEGORIES = new Set(["database", "vector-db"]);

/** The images of databases that apps run as their own sidecars (an app's PostgreSQL, MongoDB,
 *  ClickHouse, SigNoz's ZooKeeper) and of stores filed under another category (Meilisearch's
 *  index, which a new version reads only after a dump and import), matched on the image name's
 *  last part as a whole: `pgvector/pgvector:pg17` and `mongo:7`, not `postgrest/postgrest` or
 *  `supabase/postgres-meta`. */
const DATABASE_IMAGE = /^(postgres|pgvector|mariadb|mysql|mongo|redis|valkey|clickhouse-server|etcd|zookeeper|meilisearch)(:|@|$)/;

export function isDatabase(category: string | undefined, image: string | undefined): boolean {
  if (category !== undefined && DATABASE_CATEGORIES.has(category)) return true;
  return image !== undefined && DATABASE_IMAGE.test(image.split("/").pop()!);
}
