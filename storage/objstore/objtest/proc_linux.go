package objtest

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup puts the server in its own process group, so that stopping
// it also stops anything it spawned, and has the kernel kill it if the test
// binary dies without running Main's clean-up (a test timeout, for instance).
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// signalGroup sends SIGTERM, or SIGKILL when hard, to the server's process group.
func signalGroup(cmd *exec.Cmd, hard bool) {
	sig := syscall.SIGTERM
	if hard {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}
