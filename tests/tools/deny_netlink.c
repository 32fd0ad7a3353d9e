// deny_netlink: runs a command under a seccomp filter that makes socket(AF_NETLINK, ...) fail
// with EAFNOSUPPORT, the way systemd's RestrictAddressFamilies= refuses a family
// (https://www.freedesktop.org/software/systemd/man/systemd.exec.html#RestrictAddressFamilies=).
// Every other syscall, and every syscall of another ABI, is allowed. x86_64 only.
//
//   deny_netlink /path/to/PROGRAM [ARG...]     (execv: no PATH search)
//
// Raw classic BPF over struct seccomp_data (<linux/seccomp.h>); no libseccomp.
#define _GNU_SOURCE
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s PROGRAM [ARG...]\n", argv[0]);
    return 2;
  }
#if defined(__x86_64__)
  struct sock_filter filter[] = {
      // Another ABI (i386, x32 through its own bit below): allow.
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 0, 5),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_socket, 0, 3),
      // socket()'s domain is an int: the low 32 bits of args[0] (little-endian).
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[0])),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_NETLINK, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EAFNOSUPPORT & SECCOMP_RET_DATA)),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  struct sock_fprog prog = {
      .len = (unsigned short)(sizeof(filter) / sizeof(filter[0])),
      .filter = filter,
  };
  // Lets an unprivileged caller install the filter; the filter survives execv.
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
    perror("deny_netlink: prctl(PR_SET_NO_NEW_PRIVS)");
    return 126;
  }
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) != 0) {
    perror("deny_netlink: prctl(PR_SET_SECCOMP)");
    return 126;
  }
  execv(argv[1], argv + 1);
  fprintf(stderr, "deny_netlink: execv %s: %s\n", argv[1], strerror(errno));
  return 127;
#else
  fprintf(stderr, "deny_netlink: x86_64 only\n");
  return 126;
#endif
}
