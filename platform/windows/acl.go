//go:build windows

package windows

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"unsafe"

	"golang.org/x/sys/windows"
)

// UnsafeFileError reports a directory or file that exists but is not what
// tether would have created: a reparse point, the wrong type or owner.
type UnsafeFileError struct {
	Path   string
	Reason string
}

func (e *UnsafeFileError) Error() string {
	return fmt.Sprintf("%s: refusing to use it: %s", e.Path, e.Reason)
}

var userSID = sync.OnceValues(func() (string, error) {
	u, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return "", fmt.Errorf("reading the process token's user: %w", err)
	}
	return u.User.Sid.String(), nil
})

// UserSID returns the SID of the user this process runs as, in its string
// form (S-1-5-21-...).
func UserSID() (string, error) { return userSID() }

// PrivateSDDL returns the security descriptor, in SDDL, of tether's
// private objects: a protected DACL (nothing inherited from the parent)
// with one entry granting the current user rights (FA for files, GA for
// other objects), inherited by children when inherit is set.
func PrivateSDDL(rights string, inherit bool) (string, error) {
	sid, err := UserSID()
	if err != nil {
		return "", err
	}
	flags := ""
	if inherit {
		flags = "OICI"
	}
	return fmt.Sprintf("O:%sD:P(A;%s;%s;;;%s)", sid, flags, rights, sid), nil
}

func userOnlyAttributes(rights string) (*windows.SecurityAttributes, error) {
	return privateAttributes(rights, false)
}

func privateAttributes(rights string, inherit bool) (*windows.SecurityAttributes, error) {
	sddl, err := PrivateSDDL(rights, inherit)
	if err != nil {
		return nil, err
	}
	sd, err := windows.SecurityDescriptorFromString(sddl)
	if err != nil {
		return nil, fmt.Errorf("security descriptor %s: %w", sddl, err)
	}
	return &windows.SecurityAttributes{Length: uint32(unsafe.Sizeof(windows.SecurityAttributes{})), SecurityDescriptor: sd}, nil
}

// MkdirPrivate creates the directory path (its parent must exist) with a
// protected DACL that grants the current user full control and nobody
// else anything, inherited by everything created inside. The descriptor is
// given to CreateDirectory, so the directory never exists with looser
// rights. It fails with an error matching os.ErrExist if path exists.
func MkdirPrivate(path string) error {
	sa, err := privateAttributes("FA", true)
	if err != nil {
		return err
	}
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return &os.PathError{Op: "mkdir", Path: path, Err: err}
	}
	if err := windows.CreateDirectory(p, sa); err != nil {
		return &os.PathError{Op: "mkdir", Path: path, Err: err}
	}
	return nil
}

// SecureDir makes sure path is a directory private to the current user:
// it creates missing parents as usual and the directory itself with
// MkdirPrivate; an existing one must be a plain directory (no junction or
// symbolic link) owned by the user, and gets the private DACL again.
func SecureDir(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
		err = MkdirPrivate(path)
		if err == nil || !errors.Is(err, os.ErrExist) {
			return err
		}
		// Made by someone else in the meantime: check it like any
		// existing one.
		fi, err = os.Lstat(path)
	}
	if err != nil {
		return err
	}
	if fi.Mode()&(os.ModeSymlink|os.ModeIrregular) != 0 {
		return &UnsafeFileError{Path: path, Reason: "is a reparse point (symbolic link or junction)"}
	}
	if !fi.IsDir() {
		return &UnsafeFileError{Path: path, Reason: "not a directory"}
	}
	sd, err := windows.GetNamedSecurityInfo(path, windows.SE_FILE_OBJECT, windows.OWNER_SECURITY_INFORMATION)
	if err != nil {
		return &os.PathError{Op: "GetNamedSecurityInfo", Path: path, Err: err}
	}
	owner, _, err := sd.Owner()
	if err != nil {
		return &os.PathError{Op: "GetNamedSecurityInfo", Path: path, Err: err}
	}
	sid, err := UserSID()
	if err != nil {
		return err
	}
	if owner.String() != sid {
		return &UnsafeFileError{Path: path, Reason: fmt.Sprintf("owned by %s, not %s", owner, sid)}
	}
	return setPrivateDACL(path)
}

// setPrivateDACL replaces the DACL of path with the private one, the
// Windows counterpart of chmod 0700.
func setPrivateDACL(path string) error {
	sa, err := privateAttributes("FA", true)
	if err != nil {
		return err
	}
	dacl, _, err := sa.SecurityDescriptor.DACL()
	if err != nil {
		return err
	}
	err = windows.SetNamedSecurityInfo(path, windows.SE_FILE_OBJECT,
		windows.DACL_SECURITY_INFORMATION|windows.PROTECTED_DACL_SECURITY_INFORMATION, nil, nil, dacl, nil)
	if err != nil {
		return &os.PathError{Op: "SetNamedSecurityInfo", Path: path, Err: err}
	}
	return nil
}

// AllowedSIDs returns the SIDs that the DACL of path grants any access
// to, and whether the DACL is protected from inheritance: what a check of
// "who may enter" needs.
func AllowedSIDs(path string) (sids []string, protected bool, err error) {
	sd, err := windows.GetNamedSecurityInfo(path, windows.SE_FILE_OBJECT, windows.DACL_SECURITY_INFORMATION)
	if err != nil {
		return nil, false, &os.PathError{Op: "GetNamedSecurityInfo", Path: path, Err: err}
	}
	ctl, _, err := sd.Control()
	if err != nil {
		return nil, false, err
	}
	dacl, _, err := sd.DACL()
	if err != nil {
		return nil, false, err
	}
	if dacl == nil {
		// A null DACL grants everyone everything.
		return []string{"S-1-1-0"}, false, nil
	}
	for i := range uint32(dacl.AceCount) {
		var ace *windows.ACCESS_ALLOWED_ACE
		if err := windows.GetAce(dacl, i, &ace); err != nil {
			return nil, false, err
		}
		if ace.Header.AceType == windows.ACCESS_ALLOWED_ACE_TYPE {
			sids = append(sids, (*windows.SID)(unsafe.Pointer(&ace.SidStart)).String())
		}
	}
	return sids, ctl&windows.SE_DACL_PROTECTED != 0, nil
}
