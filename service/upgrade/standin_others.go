//go:build !unix

package upgrade

import (
	"errors"
	"net"
	"os"

	"github.com/tether-dev/tether/api"
)

// link is a stand-in's control socket, which only Unix has.
type link struct{}

func newLink() (*link, *os.File, error)              { return nil, nil, nil }
func (l *link) close()                               {}
func (l *link) serve(net.Listener, api.Status) error { return errors.ErrUnsupported }
func (l *link) recall() ([]net.Conn, error)          { return nil, nil }
func canStandIn() bool                               { return false }
func standIn(StatusServer) int                       { return 0 }
