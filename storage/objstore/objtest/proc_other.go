//go:build !linux

package objtest

import "os/exec"

// ownProcessGroup does nothing where process groups are not set up here; the
// servers spawn no children that outlive them.
func ownProcessGroup(*exec.Cmd) {}

// signalGroup stops the server process itself.
func signalGroup(cmd *exec.Cmd, _ bool) { _ = cmd.Process.Kill() }
