// The manifest.json of a backup archive (src/docker/backup.ts writes and verifies it). An archive
// is the user's input to restore and list: the manifest's shape is checked before any field of it
// is read, so a crafted one is refused as invalid, never an unexpected failure. Values are checked
// further by the verification (project name, time, sizes and checksums against the members).
import { Type, type Static } from "@sinclair/typebox";

const Size = Type.Integer({ minimum: 0 });

export const BackupMemberSum = Type.Object({ path: Type.String(), size: Size, sha256: Type.String() });
export type BackupMemberSum = Static<typeof BackupMemberSum>;

export const BackupManifest = Type.Object({
  formatVersion: Type.Integer(),
  tool: Type.String(),
  toolVersion: Type.String(),
  project: Type.String(),
  createdAt: Type.String(),
  hot: Type.Boolean(),
  /** What made it, when not `backup create` ("pre-restore", "pre-update", "broken-config"). */
  kind: Type.Optional(Type.String()),
  services: Type.Array(Type.Object({ name: Type.String(), image: Type.Optional(Type.String()), imageId: Type.Optional(Type.String()) })),
  volumes: Type.Array(Type.Object({ name: Type.String(), key: Type.String(), member: Type.String(), size: Size, sha256: Type.String() })),
  files: Type.Array(Type.String()),
  members: Type.Array(BackupMemberSum),
});
export type BackupManifest = Static<typeof BackupManifest>;
