// Package router is KICK's one in-process event bus: observers and the KickRequest reconciler
// publish typed events, and each subscriber (restart driver, each NotificationPolicy, timeline) reads
// them in FIFO order from its own bounded queue, which either blocks the publisher (Block) or discards
// the oldest (DropOldest).
package router
