//go:build !unix && !windows

package platform

import (
	"context"
	"net"
)

const userKind = "user"

func listen(string) (net.Listener, error) { return nil, unsupported("local sockets") }

func dial(context.Context, string) (net.Conn, error) { return nil, unsupported("local sockets") }

func peerOf(net.Conn) (Peer, error) { return Peer{}, unsupported("peer credentials") }

func currentUser() (string, error) { return "", unsupported("users") }
