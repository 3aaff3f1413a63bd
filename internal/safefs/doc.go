// Package safefs holds permtui's filesystem operations that must not be
// tricked: directories opened without following symlinks (openat, unlinkat,
// renameat), atomic 0600 writes, bounded regular-file reads, private 0700
// mkdir and pid liveness. It knows nothing of the wire protocol; the inbox,
// the audit log, the grant store and the policy loader build on it.
package safefs
