package devserver

import (
	"fmt"
	"net"
	"strconv"
)

// loopback is where every internal listener binds.
const loopback = "127.0.0.1"

// hostPort is a resolved listen address: an IP and a concrete port.
type hostPort struct {
	IP   string
	Port int
}

func (h hostPort) String() string { return net.JoinHostPort(h.IP, strconv.Itoa(h.Port)) }

// dialAddr is the address a local client dials: the listen address, or
// loopback when the listener binds every interface.
func (h hostPort) dialAddr() string {
	if ip := net.ParseIP(h.IP); ip != nil && ip.IsUnspecified() {
		return hostPort{IP: loopback, Port: h.Port}.String()
	}
	return h.String()
}

// portPicker hands out free ports. Each picked port stays bound until
// release, so no two picks collide; after release another process could in
// principle take one before the server binds it.
type portPicker struct {
	held []net.Listener
}

// pick returns a port that is free on ip.
func (p *portPicker) pick(ip string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return 0, fmt.Errorf("find a free port on %s: %w", ip, err)
	}
	p.held = append(p.held, l)
	return l.Addr().(*net.TCPAddr).Port, nil
}

// release frees every picked port for the server to bind.
func (p *portPicker) release() {
	for _, l := range p.held {
		_ = l.Close()
	}
	p.held = nil
}

// resolve parses a listen address such as "127.0.0.1:7233". The host must
// be an IP ("localhost" and "" mean 127.0.0.1), because the Temporal
// server binds to IPs only. Port 0 is replaced by a free port on that IP.
// A fixed port is checked to be free now, so that a taken port is an error
// here rather than a fatal log inside the server.
func (p *portPicker) resolve(addr string) (hostPort, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return hostPort{}, fmt.Errorf("address %q: %w", addr, err)
	}
	if host == "" || host == "localhost" {
		host = loopback
	}
	if net.ParseIP(host) == nil {
		return hostPort{}, fmt.Errorf("address %q: host must be an IP address", addr)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return hostPort{}, fmt.Errorf("address %q: invalid port", addr)
	}
	hp := hostPort{IP: host, Port: port}
	if port == 0 {
		hp.Port, err = p.pick(host)
		return hp, err
	}
	l, err := net.Listen("tcp", hp.String())
	if err != nil {
		return hostPort{}, fmt.Errorf("address %s is not available: %w", hp, err)
	}
	p.held = append(p.held, l)
	return hp, nil
}
