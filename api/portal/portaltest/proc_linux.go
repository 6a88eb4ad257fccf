package portaltest

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup puts the server in its own process group, so that stopping
// it also stops anything it spawned, and has the kernel kill it if the test
// binary dies without running its clean-ups (a test timeout, for instance).
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killGroup kills the server's process group.
func killGroup(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
