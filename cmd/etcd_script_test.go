package cmd

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/kdlbs/kandev-exec/internal/etcdtest"
)

// cmdEtcd drives a real etcd for the transcripts that need one:
//
//	etcd start [N] [tls]     N members (default 1); sets ETCD_EP (the first
//	                         endpoint) and ETCD_ENDPOINTS (all, comma-separated),
//	                         and with tls ETCD_CA, ETCD_CERT, ETCD_KEY, ETCD_OTHER_CA
//	etcd kill I | restart I  SIGKILL or restart member I
//	etcd auth USER PASS PREFIX   a user allowed PREFIX only, auth on
//	etcd put KEY VALUE       write a key as the administrator would
func (fx *fixture) cmdEtcd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: etcd start [N] [tls] | kill I | restart I | auth USER PASS PREFIX | put KEY VALUE")
	}
	if args[0] != "start" && fx.etcd == nil {
		ts.Fatalf("etcd %s: no etcd started", args[0])
	}
	member := func() int {
		if len(args) != 2 {
			ts.Fatalf("usage: etcd %s I", args[0])
		}
		i, err := strconv.Atoi(args[1])
		ts.Check(err)
		return i
	}
	switch args[0] {
	case "start":
		n := 1
		var opts []etcdtest.Option
		for _, a := range args[1:] {
			if a == "tls" {
				opts = append(opts, etcdtest.WithTLS())
				continue
			}
			var err error
			n, err = strconv.Atoi(a)
			ts.Check(err)
		}
		fx.etcd = etcdtest.Start(fx.t, n, opts...)
		ts.Setenv("ETCD_EP", fx.etcd.Endpoints()[0])
		ts.Setenv("ETCD_ENDPOINTS", strings.Join(fx.etcd.Endpoints(), ","))
		if f := fx.etcd.TLS(); f != nil {
			for name, path := range map[string]string{"ETCD_CA": f.CA, "ETCD_CERT": f.Cert, "ETCD_KEY": f.Key, "ETCD_OTHER_CA": f.OtherCA} {
				ts.Setenv(name, path)
			}
		}
	case "kill":
		fx.etcd.Kill(member())
	case "restart":
		ts.Check(fx.etcd.Restart(member()))
	case "auth":
		if len(args) != 4 {
			ts.Fatalf("usage: etcd auth USER PASS PREFIX")
		}
		ts.Check(fx.etcd.EnableAuth(args[1], args[2], args[3]))
	case "put":
		if len(args) != 3 {
			ts.Fatalf("usage: etcd put KEY VALUE")
		}
		cli, err := fx.etcd.Client()
		ts.Check(err)
		defer cli.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err = cli.Put(ctx, args[1], args[2])
		ts.Check(err)
	default:
		ts.Fatalf("unknown etcd verb %q", args[0])
	}
}
