//go:build !linux

package portaltest

import "os/exec"

// ownProcessGroup does nothing where process groups are not set up here; the
// node servers spawn no children that outlive them.
func ownProcessGroup(*exec.Cmd) {}

// killGroup kills the server process itself.
func killGroup(cmd *exec.Cmd) { _ = cmd.Process.Kill() }
