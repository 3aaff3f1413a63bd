// Package loopback is the one rule for which hosts are this machine: the
// hub, the approve page and the ntfy notifier speak clear text only there.
package loopback

import "net"

// Host reports whether host (a name or an address, without a port or
// brackets) is this machine: "localhost" or a loopback address.
func Host(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
