// SPDX-License-Identifier: GPL-2.0
/*
 * The VM lab's sched_yield, preloaded into every program of the guest (tests/vm/run): a PAUSE
 * before the system call. Under QEMU's single-threaded TCG a PAUSE ends the vCPU's turn
 * ("let another CPU run"), so a program that yields while it waits (Open MPI's ranks with
 * mpi_yield_when_idle, which tests/vm/run sets) hands the one host thread to the vCPU it waits
 * for instead of polling for the rest of its 100-ms turn. On a real machine PAUSE is the
 * spin-wait hint every polling loop uses; what the program computes does not change.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

int sched_yield(void)
{
	__builtin_ia32_pause();
	return (int)syscall(SYS_sched_yield);
}
