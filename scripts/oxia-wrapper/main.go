// Command oxia runs the upstream Oxia standalone server (github.com/oxia-db/oxia/oxiad).
//
// Upstream's own `cmd` module is only published at a pseudo-version that does not compile
// against any published oxiad, so this wrapper exposes the same `oxia standalone` flags on top
// of the upstream dataserver.NewStandalone. The server code is upstream's, unmodified.
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/oxia-db/oxia/common/logging"
	"github.com/oxia-db/oxia/oxiad/dataserver"
	"github.com/oxia-db/oxia/oxiad/dataserver/database/kvstore"
)

func usage() {
	fmt.Fprintln(os.Stderr, "usage: oxia standalone [flags]")
	os.Exit(2)
}

func main() {
	if len(os.Args) < 2 || os.Args[1] != "standalone" {
		usage()
	}
	var conf dataserver.StandaloneConfig
	fs := flag.NewFlagSet("standalone", flag.ExitOnError)
	fs.StringVar(&conf.PublicServiceAddr, "p", "0.0.0.0:6648", "public service bind address")
	fs.StringVar(&conf.PublicServiceAddr, "public-addr", "0.0.0.0:6648", "public service bind address")
	fs.StringVar(&conf.MetricsServiceAddr, "m", "0.0.0.0:8080", "metrics bind address (empty disables)")
	fs.StringVar(&conf.MetricsServiceAddr, "metrics-addr", "0.0.0.0:8080", "metrics bind address (empty disables)")
	var shards uint
	fs.UintVar(&shards, "s", 1, "number of shards")
	fs.UintVar(&shards, "shards", 1, "number of shards")
	fs.StringVar(&conf.DataDir, "data-dir", "./data/db", "directory where to store data")
	fs.StringVar(&conf.WalDir, "wal-dir", "./data/wal", "directory for write-ahead-logs")
	fs.DurationVar(&conf.WalRetentionTime, "wal-retention-time", time.Hour, "retention of write-ahead-log entries")
	fs.BoolVar(&conf.WalSyncData, "wal-sync-data", true, "whether to fsync the write-ahead-log")
	fs.BoolVar(&conf.NotificationsEnabled, "notifications-enabled", true, "whether notifications are enabled")
	fs.DurationVar(&conf.NotificationsRetentionTime, "notifications-retention-time", time.Hour, "retention of notifications")
	fs.Int64Var(&conf.DbBlockCacheMB, "db-cache-size-mb", kvstore.DefaultFactoryOptions.CacheSizeMB, "max size of the shared DB cache")
	_ = fs.Parse(os.Args[2:])
	conf.NumShards = uint32(shards)

	logging.ConfigureLogger()
	server, err := dataserver.NewStandalone(conf)
	if err != nil {
		slog.Error("failed to start the standalone server", slog.Any("error", err))
		os.Exit(1)
	}
	slog.Info("oxia standalone ready", slog.String("address", server.ServiceAddr()))

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	<-signals
	if err := server.Close(); err != nil {
		slog.Error("failed to close the standalone server", slog.Any("error", err))
		os.Exit(1)
	}
}
