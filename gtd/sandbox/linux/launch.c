/* gtd's sandbox launcher, native: the same contract as launch.py (its docstring says why each
 * layer is applied here), without starting a second Python interpreter per sandboxed command.
 *
 *     launch [--hold FD] [--landlock ABI --write PATH ...] [--nproc N] [--data BYTES] [--watch-socket FD --watch-filter FD]
 *            [--contain 1 --read PATH ... --connect PORT ... --seccomp FD --block FD] -- CMD ARG...
 *
 * Sets RLIMIT_NPROC / RLIMIT_DATA, restricts writes with Landlock to beneath the --write paths
 * (plus the standard streams that are terminals), sets no_new_privs, installs the write watch's
 * notifying seccomp filter read from --watch-filter and sends its listener to gtd over --watch-socket
 * (write_watch.py; a failure there only leaves writes unwatched), then execs CMD. The rights
 * per ABI and per file type are those of landlock.py. Failing to apply a layer that was asked for
 * exits 126: the sandbox fails closed. Built by gtd/sandbox/linux/nativelaunch.py; launch.py stays the
 * fallback where no C compiler is there.
 *
 * --contain is the Landlock backend's mode (no bubblewrap, no namespaces: linux/landlock_backend.py):
 * reads too are allowed only beneath the --read and --write paths, TCP connect (ABI 4+) only to the
 * --connect ports and TCP bind to none, signals and abstract unix sockets (ABI 6+) only within the
 * sandbox; every capability is dropped (gtd may run as root), the parent-death signal is SIGKILL,
 * the seccomp program read from --seccomp FD is loaded last, after waiting for one byte on --block FD
 * (gtd moves this process into its cgroup meanwhile). Then, standing in for a PID namespace's init, it
 * stays as the command's parent and subreaper (supervise): when the command ends, whatever it left
 * running (daemons that left its process group included) is killed, and so is all of it when gtd dies
 * (SIGTERM, the launcher's parent-death signal); it exits with the command's status. The write watch's
 * filter goes on in the command's own process, after all of that, right before exec. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define FAILED 126
#define SYS_CREATE_RULESET 444 /* the same on every architecture */
#define SYS_ADD_RULE 445
#define SYS_RESTRICT_SELF 446
#define RULE_PATH_BENEATH 1
#define RULE_NET_PORT 2

#define EXECUTE (1ULL << 0)
#define READ_FILE (1ULL << 2)
#define READ_DIR (1ULL << 3)
#define READ_RIGHTS (EXECUTE | READ_FILE | READ_DIR)
#define NET_BIND_TCP (1ULL << 0)
#define NET_CONNECT_TCP (1ULL << 1)
#define SCOPE_ABSTRACT_UNIX (1ULL << 0) /* ABI 6 */
#define SCOPE_SIGNAL (1ULL << 1)
#define CAP_LAST 63 /* PR_CAPBSET_DROP past the kernel's last one fails with EINVAL: ignored */

#define WRITE_FILE (1ULL << 1)
#define REMOVE_DIR (1ULL << 4)
#define REMOVE_FILE (1ULL << 5)
#define MAKE_CHAR (1ULL << 6)
#define MAKE_DIR (1ULL << 7)
#define MAKE_REG (1ULL << 8)
#define MAKE_SOCK (1ULL << 9)
#define MAKE_FIFO (1ULL << 10)
#define MAKE_BLOCK (1ULL << 11)
#define MAKE_SYM (1ULL << 12)
#define REFER (1ULL << 13)    /* ABI 2 */
#define TRUNCATE (1ULL << 14) /* ABI 3 */
#define FILE_RIGHTS (WRITE_FILE | TRUNCATE)

struct path_beneath {
    uint64_t allowed_access;
    int32_t parent_fd;
} __attribute__((packed));

struct net_port {
    uint64_t allowed_access;
    uint64_t port;
};

struct ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net; /* ABI 4 */
    uint64_t scoped;             /* ABI 6 */
};

struct cap_header {
    uint32_t version;
    int pid;
};
struct cap_data {
    uint32_t effective, permitted, inheritable;
};

static int fail(const char *what, int err) {
    fprintf(stderr,
            "gtd sandbox: cannot apply the kernel limits inside the sandbox: %s[Errno %d] %s (`gtd doctor` checks "
            "which layers this machine gives again)\n",
            what, err, strerror(err));
    return FAILED;
}

static int number(const char *text, unsigned long long *out) {
    char *end;
    errno = 0;
    *out = strtoull(text, &end, 10);
    return errno == 0 && end != text && *end == '\0' && text[0] != '-';
}

static uint64_t write_rights(unsigned long long abi) {
    uint64_t rights = WRITE_FILE | REMOVE_DIR | REMOVE_FILE | MAKE_CHAR | MAKE_DIR | MAKE_REG | MAKE_SOCK | MAKE_FIFO |
                      MAKE_BLOCK | MAKE_SYM;
    if (abi >= 2) rights |= REFER;
    if (abi >= 3) rights |= TRUNCATE;
    return rights;
}

static int add_rule(int ruleset, const char *path, uint64_t handled) {
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) return 0; /* a path that does not exist is skipped */
    struct stat st;
    int is_dir = fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
    struct path_beneath rule = {is_dir ? handled : (handled & (FILE_RIGHTS | READ_FILE | EXECUTE)), fd};
    long result = syscall(SYS_ADD_RULE, ruleset, RULE_PATH_BENEATH, &rule, 0);
    int err = errno;
    close(fd);
    if (result < 0) {
        errno = err;
        return -1;
    }
    return 0;
}

struct contain {
    int on;
    char **reads;
    int read_count;
    unsigned long long *ports;
    int port_count;
};

static int restrict_paths(char **paths, int count, unsigned long long abi, const struct contain *c) {
    static const char *terminals[] = {"/proc/self/fd/0", "/proc/self/fd/1", "/proc/self/fd/2"};
    uint64_t writes = write_rights(abi), reads = c->on ? READ_RIGHTS : 0;
    struct ruleset_attr attr = {writes | reads, 0, 0};
    size_t size = sizeof attr.handled_access_fs;
    if (c->on && abi >= 4) {
        attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP;
        size = 2 * sizeof(uint64_t);
    }
    if (c->on && abi >= 6) {
        attr.scoped = SCOPE_ABSTRACT_UNIX | SCOPE_SIGNAL;
        size = sizeof attr;
    }
    long ruleset = syscall(SYS_CREATE_RULESET, &attr, size, 0);
    if (ruleset < 0) return fail("", errno);
    for (int i = 0; i < count; i++)
        if (add_rule((int)ruleset, paths[i], writes | reads) < 0) return fail("", errno);
    for (int i = 0; i < c->read_count; i++)
        if (add_rule((int)ruleset, c->reads[i], reads) < 0) return fail("", errno);
    for (int i = 0; attr.handled_access_net && i < c->port_count; i++) {
        struct net_port rule = {NET_CONNECT_TCP, c->ports[i]};
        if (syscall(SYS_ADD_RULE, (int)ruleset, RULE_NET_PORT, &rule, 0) < 0) return fail("", errno);
    }
    for (int fd = 0; fd < 3; fd++)
        if (isatty(fd) && add_rule((int)ruleset, terminals[fd], writes | reads) < 0) return fail("", errno);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return fail("", errno);
    if (syscall(SYS_RESTRICT_SELF, (int)ruleset, 0) < 0) return fail("", errno);
    close((int)ruleset);
    return 0;
}

/* Every capability gone, for good: gtd may run as root, and no namespace takes root's away here. */
static int drop_capabilities(void) {
    for (int cap = 0; cap <= CAP_LAST; cap++)
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno != EINVAL && errno != EPERM) return fail("", errno);
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    struct cap_header header = {0x20080522, 0}; /* _LINUX_CAPABILITY_VERSION_3 */
    struct cap_data data[2] = {{0, 0, 0}, {0, 0, 0}};
    if (syscall(SYS_capset, &header, data) != 0) return fail("", errno);
    return 0;
}

static int load_seccomp(int fd) {
    static unsigned char program[65536];
    size_t got = 0;
    ssize_t n;
    while (got < sizeof program && (n = read(fd, program + got, sizeof program - got)) > 0) got += (size_t)n;
    close(fd);
    if (got == 0 || got % sizeof(struct sock_filter) != 0) return fail("seccomp program: ", EINVAL);
    struct sock_fprog prog = {(unsigned short)(got / sizeof(struct sock_filter)), (struct sock_filter *)program};
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return fail("", errno);
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0) return fail("seccomp: ", errno);
    return 0;
}

static volatile sig_atomic_t stop_signal;

static void on_stop(int signum) { stop_signal = signum; }

/* SIGKILL every child (orphans come here: the subreaper) until none is left, reaping them. */
static void kill_children(void) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/children", (int)getpid());
    static int pids[4096];
    for (int round = 0; round < 10000; round++) {
        FILE *f = fopen(path, "r");
        int count = 0;
        while (f != NULL && count < 4096 && fscanf(f, "%d", &pids[count]) == 1) kill(pids[count++], SIGKILL);
        if (f != NULL) fclose(f);
        for (int i = 0; i < count; i++) waitpid(pids[i], NULL, 0); /* their children come here next */
        while (waitpid(-1, NULL, WNOHANG) > 0) count++;
        if (count == 0) return;
    }
}

/* Install the notifying filter and hand its listener to gtd; the command never holds either descriptor. */
static void watch_writes(int sock, int filter) {
    static struct sock_filter program[BPF_MAXINSNS];
    size_t size = 0;
    ssize_t n;
    while (size < sizeof program && (n = read(filter, (char *)program + size, sizeof program - size)) > 0)
        size += (size_t)n;
    close(filter);
    struct sock_fprog prog = {(unsigned short)(size / sizeof program[0]), program};
    int listener = -1;
    if (size > 0 && size % sizeof program[0] == 0 && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0)
        listener = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
    if (listener >= 0) {
        char byte = 0, control[CMSG_SPACE(sizeof(int))];
        struct iovec iov = {&byte, 1};
        struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control, .msg_controllen = sizeof control};
        memset(control, 0, sizeof control);
        struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
        cmsg->cmsg_level = SOL_SOCKET;
        cmsg->cmsg_type = SCM_RIGHTS;
        cmsg->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cmsg), &listener, sizeof(int));
        sendmsg(sock, &msg, MSG_NOSIGNAL);
        close(listener);
    }
    close(sock);
}

/* watch_socket, watch_filter: the write watch's (0: none), installed in the command's process only (the
 * launcher makes no watched call gtd needs to hear of), and closed here once it is forked. */
static int supervise(char **command, pid_t parent, int watch_socket, int watch_filter) {
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) return fail("", errno);
    struct sigaction stop = {0};
    stop.sa_handler = on_stop;
    sigaction(SIGTERM, &stop, NULL);
    sigaction(SIGHUP, &stop, NULL);
    if (prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0) != 0) return fail("", errno);
    if (getppid() != parent) return FAILED; /* gtd died before that signal was set */
    pid_t child = fork();
    if (child < 0) return fail("", errno);
    if (child == 0) {
        signal(SIGTERM, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        if (watch_socket && watch_filter) watch_writes(watch_socket, watch_filter);
        execvp(command[0], command);
        int err = errno;
        fprintf(stderr, "gtd sandbox: cannot run %s: %s\n", command[0], strerror(err));
        _exit(err == ENOENT ? 127 : FAILED);
    }
    if (watch_socket && watch_filter) { /* gtd's thread then sees EOF if the command never sent the listener */
        close(watch_socket);
        close(watch_filter);
    }
    signal(SIGINT, SIG_IGN); /* the terminal's Ctrl-C is the command's to handle (gtd signals the group) */
    signal(SIGQUIT, SIG_IGN);
    signal(SIGTSTP, SIG_IGN);
    int status = 0;
    for (;;) {
        if (stop_signal) break;
        pid_t done = waitpid(-1, &status, 0);
        if (done == child) break;
        if (done < 0 && errno == ECHILD) break;
    }
    int stopped = stop_signal;
    kill_children();
    if (stopped) return 128 + stopped;
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    int signum = WIFSIGNALED(status) ? WTERMSIG(status) : SIGKILL;
    signal(signum, SIG_DFL);
    kill(getpid(), signum); /* the command's death, told the way a shell reads it */
    return 128 + signum;
}

/* --hold FD (under bwrap: start_hold.py): say this launcher runs, then wait for gtd's go. End of file means
 * gtd is gone, and so must the command be: exit before applying or running anything. */
static int hold(int fd) {
    char byte = 'r';
    if (send(fd, &byte, 1, MSG_NOSIGNAL) != 1) return FAILED;
    if (read(fd, &byte, 1) != 1 || byte != '1') return FAILED;
    close(fd);
    return 0;
}

static int limit(int resource, unsigned long long value) {
    struct rlimit rl = {value, value};
    return setrlimit(resource, &rl) == 0 ? 0 : fail("", errno);
}

int main(int argc, char **argv) {
    unsigned long long abi = 0, nproc = 0, data = 0, contain = 0, seccomp_fd = 0, block_fd = 0, port;
    unsigned long long watch_socket = 0, watch_filter = 0, hold_fd = 0;
    char **paths = calloc((size_t)argc, sizeof *paths), **reads = calloc((size_t)argc, sizeof *reads);
    unsigned long long *ports = calloc((size_t)argc, sizeof *ports);
    int count = 0, read_count = 0, port_count = 0, i = 1, has_seccomp = 0, has_block = 0, has_hold = 0;
    if (paths == NULL || reads == NULL || ports == NULL) return FAILED;
    for (; i < argc && strcmp(argv[i], "--") != 0; i += 2) {
        const char *key = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        unsigned long long *target = strcmp(key, "--landlock") == 0  ? &abi
                                     : strcmp(key, "--nproc") == 0   ? &nproc
                                     : strcmp(key, "--data") == 0    ? &data
                                     : strcmp(key, "--contain") == 0 ? &contain
                                     : strcmp(key, "--seccomp") == 0 ? &seccomp_fd
                                     : strcmp(key, "--block") == 0   ? &block_fd
                                     : strcmp(key, "--watch-socket") == 0 ? &watch_socket
                                     : strcmp(key, "--watch-filter") == 0 ? &watch_filter
                                     : strcmp(key, "--hold") == 0         ? &hold_fd
                                                                     : NULL;
        if (value != NULL && strcmp(key, "--write") == 0) {
            paths[count++] = argv[i + 1];
        } else if (value != NULL && strcmp(key, "--read") == 0) {
            reads[read_count++] = argv[i + 1];
        } else if (value != NULL && strcmp(key, "--connect") == 0 && number(value, &port) && port < 65536) {
            ports[port_count++] = port;
        } else if (value == NULL || target == NULL || !number(value, target)) {
            fprintf(stderr, "gtd sandbox launcher: bad argument %s\n", key);
            return FAILED;
        } else {
            has_seccomp |= target == &seccomp_fd;
            has_block |= target == &block_fd;
            has_hold |= target == &hold_fd;
        }
    }
    char **command = argv + i + 1;
    if (i >= argc || *command == NULL) {
        fputs("gtd sandbox launcher: no command\n", stderr);
        return FAILED;
    }
    if (contain && (!abi || !has_seccomp)) { /* the backend's whole point: never contained by half */
        fputs("gtd sandbox launcher: --contain needs --landlock and --seccomp\n", stderr);
        return FAILED;
    }
    if (has_hold && hold((int)hold_fd)) return FAILED;
    pid_t parent = getppid();
    if (contain && prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) != 0) return fail("", errno);
    if (has_block) { /* gtd writes one byte once this process is in its cgroup; EOF: gtd is gone */
        char go;
        if (read((int)block_fd, &go, 1) != 1) return FAILED;
        close((int)block_fd);
    }
    if (contain && getppid() != parent) return FAILED; /* gtd died before the parent-death signal was set */
    if (nproc && limit(RLIMIT_NPROC, nproc)) return FAILED;
    if (data && limit(RLIMIT_DATA, data)) return FAILED;
    struct contain c = {(int)contain, reads, read_count, ports, port_count};
    if (abi && restrict_paths(paths, count, abi, &c)) return FAILED;
    if (contain && drop_capabilities()) return FAILED;
    if (has_seccomp && load_seccomp((int)seccomp_fd)) return FAILED;
    if (contain) return supervise(command, parent, (int)watch_socket, (int)watch_filter);
    if (watch_socket && watch_filter) watch_writes((int)watch_socket, (int)watch_filter);
    execvp(command[0], command);
    int err = errno;
    fprintf(stderr, "gtd sandbox: cannot run %s: %s\n", command[0], strerror(err));
    return err == ENOENT ? 127 : FAILED;
}
