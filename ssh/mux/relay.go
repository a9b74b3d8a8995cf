package mux

import (
	"errors"
	"io"
	"sync"

	xssh "golang.org/x/crypto/ssh"
)

// relayChannel opens the channel a client asked for on the host's
// connection, with the same type and data, and relays the two. A refusal
// is passed back with its reason, so a client tells a server's session
// limit (a resource shortage) from a prohibition as it would directly.
func (m *master) relayChannel(nch xssh.NewChannel) {
	up, upReqs, err := m.up.OpenChannel(nch.ChannelType(), nch.ExtraData())
	if err != nil {
		var oce *xssh.OpenChannelError
		if errors.As(err, &oce) {
			nch.Reject(oce.Reason, oce.Message)
		} else {
			nch.Reject(xssh.ConnectionFailed, err.Error())
		}
		return
	}
	down, downReqs, err := nch.Accept()
	if err != nil {
		up.Close()
		return
	}
	splice(down, downReqs, up, upReqs)
}

// splice relays data, extended data, EOF and requests both ways between
// a client's channel (down) and the host's (up). The client's channel is
// closed only once the host's request stream has ended, after its last
// data: an exit status sent just before the host closed still arrives.
func splice(down xssh.Channel, downReqs <-chan *xssh.Request, up xssh.Channel, upReqs <-chan *xssh.Request) {
	var fromUp sync.WaitGroup
	fromUp.Add(2)
	go func() { defer fromUp.Done(); io.Copy(down, up) }()
	go func() { defer fromUp.Done(); io.Copy(down.Stderr(), up.Stderr()) }()
	go func() {
		fromUp.Wait()
		down.CloseWrite()
	}()
	go func() {
		io.Copy(up, down)
		up.CloseWrite()
	}()
	go io.Copy(up.Stderr(), down.Stderr())
	go func() {
		forward(up, downReqs)
		// The client closed its channel (or its connection ended).
		up.Close()
	}()
	forward(down, upReqs)
	fromUp.Wait()
	down.Close()
}

// forward sends each request of reqs on to ch, and ch's answer back.
func forward(ch xssh.Channel, reqs <-chan *xssh.Request) {
	for r := range reqs {
		ok, err := ch.SendRequest(r.Type, r.WantReply, r.Payload)
		if r.WantReply {
			r.Reply(ok && err == nil, nil)
		}
	}
}
