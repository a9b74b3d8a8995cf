package cmd

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	xssh "golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/kdlbs/kandev-exec/internal/etcdtest"
	"github.com/kdlbs/kandev-exec/internal/helperbin"
	"github.com/kdlbs/kandev-exec/internal/helpertest"
	"github.com/kdlbs/kandev-exec/internal/sshsig/sshsigtest"
	"github.com/kdlbs/kandev-exec/internal/sshtest"
)

// testReleaseKeyEnv carries the transcripts' release key (its public
// half) to the CLI they run; only this test binary reads it.
const testReleaseKeyEnv = "KANDEV_EXEC_TEST_RELEASE_KEY"

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"kandev-exec": func() {
			if k := os.Getenv(testReleaseKeyEnv); k != "" {
				helperbin.TrustForTesting(k)
			}
			os.Exit(Execute())
		},
	})
}

// fixture is the set of real sshd servers one transcript runs against.
type fixture struct {
	t       *testing.T
	servers map[string]*sshtest.Server
	relay   *sshtest.Relay
	held    *os.File // the store lock taken by holdlock
	etcd    *etcdtest.Cluster
	helper  string // the real helper for this platform
	release *sshsigtest.Signer
	ca      *sshtest.CA // the transcript's host and user CA, once a server needs it
}

// TestScripts runs every transcript in testdata/script against its own
// real OpenSSH servers: target, bastion and bastion2, plus a fault relay
// in front of target.
func TestScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/script/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no transcripts found: %v", err)
	}
	// The helper is built once for every transcript: the test binary stands
	// in for the CLI, but launches upload what a user's would, the helper
	// found in the user cache.
	helper := helpertest.Build(t)
	// The transcripts sign their releases with this key ($RELEASE_KEY),
	// and their CLI trusts it in place of the project's.
	release, err := sshsigtest.New(t.TempDir(), "ed25519")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		name := strings.TrimSuffix(filepath.Base(file), ".txtar")
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fx := &fixture{t: t, helper: helper, release: release, servers: map[string]*sshtest.Server{
				"target":   sshtest.NewServer(t, sshtest.WithHostKeyTypes(sshtest.KeyEd25519, sshtest.KeyECDSA, sshtest.KeyRSA)),
				"bastion":  sshtest.NewServer(t),
				"bastion2": sshtest.NewServer(t),
			}}
			fx.relay = sshtest.NewRelay(t, fx.servers["target"].Addr())
			testscript.Run(t, testscript.Params{
				Files:               []string{file},
				Setup:               fx.setup,
				Cmds:                fx.cmds(),
				Condition:           launchCondition,
				RequireExplicitExec: false,
			})
		})
	}
}

func (fx *fixture) setup(env *testscript.Env) error {
	home := filepath.Join(env.WorkDir, "home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	cfg := filepath.Join(env.WorkDir, "ssh_config")
	if err := fx.writeConfig(cfg); err != nil {
		return err
	}
	closed, err := closedPort()
	if err != nil {
		return err
	}
	env.Setenv("HOME", home)
	// The test binary's version is dev: its helpers are cached under dev.
	cache := filepath.Join(env.WorkDir, "cache")
	dev := filepath.Join(cache, "kandev-exec", "helpers", "dev")
	if err := os.MkdirAll(dev, 0o700); err != nil {
		return err
	}
	if err := os.Symlink(fx.helper, filepath.Join(dev, filepath.Base(fx.helper))); err != nil {
		return err
	}
	env.Setenv("XDG_CACHE_HOME", cache)
	env.Setenv("HELPER_CACHE", dev)
	env.Setenv("RELEASE_KEY", fx.release.KeyPath)
	env.Setenv(testReleaseKeyEnv, fx.release.AuthorizedKey)
	env.Setenv("KANDEV_EXEC_STATE_DIR", filepath.Join(env.WorkDir, "state"))
	env.Setenv("KANDEV_EXEC_SSH_CONFIG", cfg)
	env.Setenv("SSH_AUTH_SOCK", "")
	env.Setenv("NO_COLOR", "1")
	env.Setenv("USER_KEY", fx.servers["target"].UserKeyPath)
	env.Setenv("CLOSED_PORT", strconv.Itoa(closed))
	env.Setenv("RELAY_PORT", strconv.Itoa(fx.relay.Port()))
	env.Setenv("TARGET_KT", "ssh-ed25519")
	env.Setenv("ME", fx.servers["target"].User())
	for name, s := range fx.servers {
		up := strings.ToUpper(name)
		env.Setenv(up+"_PORT", strconv.Itoa(s.Port()))
		env.Setenv(up+"_FP", negotiated(s))
		env.Setenv(up+"_FPRE", regexp.QuoteMeta(negotiated(s)))
	}
	return nil
}

// writeConfig writes aliases for every way the transcripts reach a host.
func (fx *fixture) writeConfig(path string) error {
	t, b, b2 := fx.servers["target"], fx.servers["bastion"], fx.servers["bastion2"]
	// The fixture's servers share no user keys; authorize target's key everywhere.
	b.AuthorizeKey(t.UserPublicKey)
	b2.AuthorizeKey(t.UserPublicKey)
	var s strings.Builder
	host := func(alias string, port int, extra ...string) {
		fmt.Fprintf(&s, "Host %s\n  HostName 127.0.0.1\n  Port %d\n  User %s\n  IdentityFile %s\n  IdentitiesOnly yes\n",
			alias, port, t.User(), t.UserKeyPath)
		for _, e := range extra {
			fmt.Fprintf(&s, "  %s\n", e)
		}
	}
	host("target", t.Port())
	host("bastion", b.Port())
	host("bastion2", b2.Port())
	host("behind", t.Port(), "ProxyJump bastion")
	host("deep", t.Port(), "ProxyJump bastion,bastion2")
	host("bastion2via", b2.Port(), "ProxyJump bastion")
	host("deepalias", t.Port(), "ProxyJump bastion2via")
	host("relayed", fx.relay.Port())
	fmt.Fprintf(&s, "Host *\n  ServerAliveInterval 30\n")
	return os.WriteFile(path, []byte(s.String()), 0o600)
}

var braced = regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*\}`)

// negotiated is the fingerprint an unpinned dial ends up with: OpenSSH's
// order prefers Ed25519, which every fixture server has.
func negotiated(s *sshtest.Server) string { return s.Fingerprint(sshtest.KeyEd25519) }

func closedPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	port := l.Addr().(*net.TCPAddr).Port
	return port, l.Close()
}

func (fx *fixture) cmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		// sshd stop|start|rotate NAME
		"sshd": func(ts *testscript.TestScript, neg bool, args []string) {
			if neg || len(args) != 2 {
				ts.Fatalf("usage: sshd stop|start|rotate NAME")
			}
			s := fx.servers[args[1]]
			if s == nil {
				ts.Fatalf("no server %q", args[1])
			}
			switch args[0] {
			case "stop":
				s.Stop()
			case "start":
				s.Start()
			case "rotate":
				s.RotateHostKey()
				ts.Setenv(strings.ToUpper(args[1])+"_FP", negotiated(s))
				ts.Setenv(strings.ToUpper(args[1])+"_FPRE", regexp.QuoteMeta(negotiated(s)))
			default:
				ts.Fatalf("unknown sshd verb %q", args[0])
			}
		},
		// expandenv FILE...: replace ${VAR} (braces only, so shell code in
		// the file keeps its $VAR) with the script's env.
		"expandenv": func(ts *testscript.TestScript, neg bool, args []string) {
			for _, f := range args {
				b, err := os.ReadFile(ts.MkAbs(f))
				ts.Check(err)
				out := braced.ReplaceAllStringFunc(string(b), func(m string) string { return ts.Getenv(m[2 : len(m)-1]) })
				ts.Check(os.WriteFile(ts.MkAbs(f), []byte(out), 0o600))
			}
		},
		// exits N CMD [ARG...]: run CMD and require exit status N, so
		// transcripts pin the documented exit codes, not just "failed".
		"exits": func(ts *testscript.TestScript, neg bool, args []string) {
			if neg || len(args) < 2 {
				ts.Fatalf("usage: exits N CMD [ARG...]")
			}
			want, err := strconv.Atoi(args[0])
			ts.Check(err)
			got := 0
			if err := ts.Exec(args[1], args[2:]...); err != nil {
				var ee *exec.ExitError
				if !errors.As(err, &ee) {
					ts.Fatalf("%s: %v", args[1], err)
				}
				got = ee.ExitCode()
			}
			if got != want {
				ts.Fatalf("%s exited %d, want %d", args[1], got, want)
			}
		},
		// holdlock DIR / releaselock: take the state store's lock the way
		// another kandev-exec would, naming this process as the holder.
		"holdlock": func(ts *testscript.TestScript, neg bool, args []string) {
			if neg || len(args) != 1 {
				ts.Fatalf("usage: holdlock STATEDIR")
			}
			f, err := os.OpenFile(filepath.Join(ts.MkAbs(args[0]), "lock"), os.O_RDWR|os.O_CREATE, 0o600)
			ts.Check(err)
			ts.Check(syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB))
			holder := fmt.Sprintf(`{"pid":%d,"command":"holdlock (a test)","host":"here","since":"2026-01-02T03:04:05Z"}`, os.Getpid())
			ts.Check(os.WriteFile(filepath.Join(ts.MkAbs(args[0]), "lock.holder"), []byte(holder), 0o600))
			fx.held = f
			ts.Defer(func() { f.Close() })
		},
		"releaselock": func(ts *testscript.TestScript, neg bool, args []string) {
			os.Remove(filepath.Join(ts.Getenv("KANDEV_EXEC_STATE_DIR"), "lock.holder"))
			fx.held.Close()
		},
		// relay pass|blackhole|refuse|reset|freeze|thaw
		"relay": func(ts *testscript.TestScript, neg bool, args []string) {
			if neg || len(args) != 1 {
				ts.Fatalf("usage: relay pass|blackhole|refuse|reset|freeze|thaw")
			}
			switch args[0] {
			case "pass":
				fx.relay.Pass()
			case "blackhole":
				fx.relay.Blackhole()
			case "refuse":
				fx.relay.Refuse()
			case "reset":
				fx.relay.Reset()
			case "freeze":
				fx.relay.Freeze()
			case "thaw":
				fx.relay.Thaw()
			default:
				ts.Fatalf("unknown relay mode %q", args[0])
			}
		},
		"etcd":      fx.cmdEtcd,
		"waitfile":  cmdWaitFile,
		"require":   cmdRequire,
		"fishuser":  fx.cmdFishUser,
		"shimuser":  fx.cmdShimUser,
		"capture":   cmdCapture,
		"putrecord": cmdPutRecord,
		"dropfield": cmdDropField,
		"holdclaim": cmdHoldClaim,
		"backdate":  cmdBackdate,
		"stallhttp": fx.cmdStallHTTP,
		"unstall":   cmdUnstall,
		"freeport":  cmdFreePort,
		"httpget":   cmdHTTPGet,
		"server":    fx.cmdServer,
		"recertify": fx.cmdRecertify,
		// genkey NAME [passphrase]: a new key authorized on target.
		"genkey": func(ts *testscript.TestScript, neg bool, args []string) {
			if neg || len(args) < 1 || len(args) > 2 {
				ts.Fatalf("usage: genkey NAME [passphrase]")
			}
			pass := ""
			if len(args) == 2 {
				pass = args[1]
			}
			t := fx.servers["target"]
			path, pub := t.NewUserKey(fx.t, pass)
			t.AuthorizeKey(pub)
			dst := ts.MkAbs(args[0])
			for _, suffix := range []string{"", ".pub"} {
				b, err := os.ReadFile(path + suffix)
				ts.Check(err)
				ts.Check(os.WriteFile(dst+suffix, b, 0o600))
			}
		},
		// agent JUNK [KEYFILE [PASSPHRASE]]: serve an agent holding JUNK
		// unauthorized keys (added first) and optionally KEYFILE.
		"agent": func(ts *testscript.TestScript, neg bool, args []string) {
			if neg || len(args) < 1 {
				ts.Fatalf("usage: agent JUNK [KEYFILE [PASSPHRASE]]")
			}
			junk, err := strconv.Atoi(args[0])
			ts.Check(err)
			kr := agent.NewKeyring()
			for i := 0; i < junk; i++ {
				_, priv, _ := ed25519.GenerateKey(rand.Reader)
				ts.Check(kr.Add(agent.AddedKey{PrivateKey: priv, Comment: fmt.Sprintf("junk-%d", i)}))
			}
			if len(args) >= 2 {
				pem, err := os.ReadFile(ts.MkAbs(args[1]))
				ts.Check(err)
				var key any
				if len(args) == 3 {
					key, err = xssh.ParseRawPrivateKeyWithPassphrase(pem, []byte(args[2]))
				} else {
					key, err = xssh.ParseRawPrivateKey(pem)
				}
				ts.Check(err)
				ts.Check(kr.Add(agent.AddedKey{PrivateKey: key}))
			}
			// Unix socket paths are short; $WORK may be too deep.
			dir, err := os.MkdirTemp("", "ke-agent")
			ts.Check(err)
			sock := filepath.Join(dir, "s")
			l, err := net.Listen("unix", sock)
			ts.Check(err)
			ts.Defer(func() { l.Close(); os.RemoveAll(dir) })
			go func() {
				for {
					c, err := l.Accept()
					if err != nil {
						return
					}
					go func() { defer c.Close(); _ = agent.ServeAgent(kr, c) }()
				}
			}()
			ts.Setenv("SSH_AUTH_SOCK", sock)
		},
	}
}
