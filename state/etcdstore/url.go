package etcdstore

import (
	"fmt"
	"net"
	"strconv"
	"strings"
)

// ParseURL reads etcd://host[:port][,host[:port]...]/prefix into client
// endpoints (port 2379 when none is given) and the key prefix.
func ParseURL(raw string) (endpoints []string, prefix string, err error) {
	rest, ok := strings.CutPrefix(raw, "etcd://")
	if !ok {
		return nil, "", fmt.Errorf("store URL %q: want etcd://host:2379[,host:2379...]/prefix", raw)
	}
	hosts, path, _ := strings.Cut(rest, "/")
	if hosts == "" {
		return nil, "", fmt.Errorf("store URL %q names no endpoint", raw)
	}
	for _, h := range strings.Split(hosts, ",") {
		ep, err := endpoint(h)
		if err != nil {
			return nil, "", fmt.Errorf("store URL %q: %w", raw, err)
		}
		endpoints = append(endpoints, ep)
	}
	prefix = "/" + strings.TrimSuffix(path, "/")
	if err := checkPrefix(prefix); err != nil {
		return nil, "", fmt.Errorf("store URL %q: %w (etcd://host:2379/kandev-exec)", raw, err)
	}
	return endpoints, prefix, nil
}

func endpoint(h string) (string, error) {
	if h == "" {
		return "", fmt.Errorf("empty endpoint")
	}
	host, port, err := net.SplitHostPort(h)
	if err != nil {
		// No port: the whole thing is the host (IPv6 in brackets).
		host, port = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"), "2379"
		if strings.ContainsAny(host, "[]") {
			return "", fmt.Errorf("endpoint %q: %w", h, err)
		}
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("endpoint %q: bad port %q", h, port)
	}
	if host == "" || strings.ContainsAny(host, "@?#/ ") {
		return "", fmt.Errorf("endpoint %q: bad host", h)
	}
	return net.JoinHostPort(host, port), nil
}

// Loopback reports whether every endpoint is on this machine (localhost,
// 127.0.0.0/8, ::1), where plain text crosses no network.
func Loopback(endpoints []string) bool {
	for _, ep := range endpoints {
		host, _, err := net.SplitHostPort(ep)
		if err != nil {
			return false
		}
		if host == "localhost" {
			continue
		}
		if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
			return false
		}
	}
	return len(endpoints) > 0
}
