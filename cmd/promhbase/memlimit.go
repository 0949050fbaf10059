package main

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime/debug"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// setMemLimit sets the Go runtime's soft memory limit (GOMEMLIMIT) to
// --auto-gomemlimit.ratio of the memory limit of the process's cgroup (v1
// or v2, the nearest limited ancestor's), as Prometheus 3's
// --auto-gomemlimit does, and logs what it chose: the limit taken, the
// environment's GOMEMLIMIT (which wins), no limit found, or the flag off.
// It fails only on a ratio outside (0, 1].
func setMemLimit(logger *slog.Logger) error {
	ratio := serveOpts.memLimitRatio
	if ratio <= 0 || ratio > 1 || math.IsNaN(ratio) {
		return fmt.Errorf("--auto-gomemlimit.ratio=%v: want a share in (0, 1]", ratio)
	}
	switch {
	case !serveOpts.autoMemLimit:
		logger.Info("GOMEMLIMIT not set from the container's memory limit (--no-auto-gomemlimit)", "gomemlimit", memLimitAttr(debug.SetMemoryLimit(-1)))
		return nil
	case os.Getenv("GOMEMLIMIT") != "":
		logger.Info("GOMEMLIMIT from the environment", "gomemlimit", memLimitAttr(debug.SetMemoryLimit(-1)))
		return nil
	}
	limit, err := memlimit.FromCgroup()
	switch {
	case errors.Is(err, memlimit.ErrNoLimit) || (err == nil && limit >= math.MaxInt64/2):
		logger.Info("no memory limit in the process's cgroup: GOMEMLIMIT not set")
		return nil
	case err != nil:
		logger.Info("the container's memory limit cannot be read: GOMEMLIMIT not set", "err", err)
		return nil
	}
	set := int64(float64(limit) * ratio)
	debug.SetMemoryLimit(set)
	logger.Info("GOMEMLIMIT set from the container's memory limit", "cgroup_limit_bytes", limit, "ratio", ratio, "gomemlimit_bytes", set)
	return nil
}

// memLimitAttr is the runtime's memory limit as a log value: "none"
// when unset (math.MaxInt64), else its bytes.
func memLimitAttr(v int64) any {
	if v == math.MaxInt64 {
		return "none"
	}
	return v
}
