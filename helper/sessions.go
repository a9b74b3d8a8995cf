package helper

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/kdlbs/kandev-exec/controller"
	"github.com/kdlbs/kandev-exec/helper/protocol"
)

// The operations the helper composes itself from the controller's
// primitives: sessions probed or read on the host, and a controller
// started with the proof that it answers.

func probeSessions(r protocol.SessionsRequest) protocol.SessionsReport {
	out := protocol.SessionsReport{Sessions: make([]protocol.SessionReport, len(r.Sessions))}
	for i, s := range r.Sessions {
		rep := &out.Sessions[i]
		id, err := identity(controller.Probe(s.SessionDir, s.StartTime))
		if err != nil {
			rep.Error = err.Error()
			continue
		}
		rep.Identity = id
		files, err := sessionFiles(s.SessionDir)
		if err != nil {
			rep.Error = err.Error()
			continue
		}
		rep.Files = files
	}
	return out
}

// identity: no pid file means the session dir is gone or no controller
// ever ran in it, and a controller whose dir is gone stops itself:
// nothing alive to prove.
func identity(id controller.Identity, err error) (controller.Identity, error) {
	if errors.Is(err, os.ErrNotExist) {
		return controller.Identity{}, nil
	}
	return id, err
}

func sessionFiles(dir string) (*protocol.SessionFiles, error) {
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return &protocol.SessionFiles{Missing: true}, nil
	}
	pid, port, err := controller.ReadPIDPort(dir)
	if err != nil {
		return nil, err
	}
	out := &protocol.SessionFiles{PID: pid, Port: port}
	if st, err := controller.ReadStatusFile(dir); err == nil {
		out.Status = &st
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return out, nil
}

// proofWait bounds the question for the proof: the controller is serving
// by the time it reports ready.
const proofWait = 15 * time.Second

func startController(ctx context.Context, r protocol.ControllerStart, progress func(protocol.Progress)) (any, error) {
	started, err := controller.Start(r.StartRequest)
	if err != nil {
		return nil, err
	}
	out := protocol.Started{StartResponse: *started}
	if r.Nonce == "" {
		return out, nil
	}
	progress(protocol.Progress{Step: protocol.StepProof})
	ctx, cancel := context.WithTimeout(ctx, proofWait)
	defer cancel()
	h, err := controller.NewClient(nil, started.Port, r.Token).Prove(ctx, r.Nonce)
	if err != nil {
		out.Unproven = err.Error()
	} else {
		out.Health = &h
	}
	return out, nil
}
