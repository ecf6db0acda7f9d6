// Package sdnotify reads systemd's service notification protocol: the
// newline-separated KEY=VALUE assignments that a program written for
// Type=notify sends as one datagram to $NOTIFY_SOCKET (sd_notify(3)).
//
// It owns the wire format only: which assignments exist, what they mean and
// how a malformed one is reported. Receiving datagrams, and deciding whether
// their sender may speak for an agent, belong to the guardian and the
// platform packages. Anything may import it.
package sdnotify
