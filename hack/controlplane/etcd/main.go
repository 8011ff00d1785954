// Command etcd runs the etcd server built from go.etcd.io/etcd/server/v3 for
// the local development cluster, so no system package is needed.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
