// Package bench holds `make bench`'s Go benchmarks: whole CLI runs
// against real sshd servers, timed next to the same steps done with
// plain OpenSSH, and the state store's operations on a real etcd next to
// the file store. They print figures and assert nothing about speed; the
// `bench` build tag keeps them out of `make test`. TestBenchFlights
// prints each command's flights through the relay (sshtest.Relay.Trace):
// where its round trips go.
package bench
