/* gtd's sandbox launcher, native: the same contract as launch.py (its docstring says why each
 * layer is applied here), without starting a second Python interpreter per sandboxed command.
 *
 *     launch [--landlock ABI --write PATH ...] [--nproc N] [--data BYTES] -- CMD ARG...
 *
 * Sets RLIMIT_NPROC / RLIMIT_DATA, restricts writes with Landlock to beneath the --write paths
 * (plus the standard streams that are terminals), sets no_new_privs, then execs CMD. The rights
 * per ABI and per file type are those of landlock.py. Failing to apply a layer that was asked for
 * exits 126: the sandbox fails closed. Built by gtd/sandbox/linux/nativelaunch.py; launch.py stays the
 * fallback where no C compiler is there. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define FAILED 126
#define SYS_CREATE_RULESET 444 /* the same on every architecture */
#define SYS_ADD_RULE 445
#define SYS_RESTRICT_SELF 446
#define RULE_PATH_BENEATH 1

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
    struct path_beneath rule = {is_dir ? handled : (handled & FILE_RIGHTS), fd};
    long result = syscall(SYS_ADD_RULE, ruleset, RULE_PATH_BENEATH, &rule, 0);
    int err = errno;
    close(fd);
    if (result < 0) {
        errno = err;
        return -1;
    }
    return 0;
}

static int restrict_writes(char **paths, int count, unsigned long long abi) {
    static const char *terminals[] = {"/proc/self/fd/0", "/proc/self/fd/1", "/proc/self/fd/2"};
    uint64_t handled = write_rights(abi);
    long ruleset = syscall(SYS_CREATE_RULESET, &handled, sizeof handled, 0);
    if (ruleset < 0) return fail("", errno);
    for (int i = 0; i < count; i++)
        if (add_rule((int)ruleset, paths[i], handled) < 0) return fail("", errno);
    for (int fd = 0; fd < 3; fd++)
        if (isatty(fd) && add_rule((int)ruleset, terminals[fd], handled) < 0) return fail("", errno);
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) return fail("", errno);
    if (syscall(SYS_RESTRICT_SELF, (int)ruleset, 0) < 0) return fail("", errno);
    close((int)ruleset);
    return 0;
}

static int limit(int resource, unsigned long long value) {
    struct rlimit rl = {value, value};
    return setrlimit(resource, &rl) == 0 ? 0 : fail("", errno);
}

int main(int argc, char **argv) {
    unsigned long long abi = 0, nproc = 0, data = 0;
    char **paths = calloc((size_t)argc, sizeof *paths);
    int count = 0, i = 1;
    if (paths == NULL) return FAILED;
    for (; i < argc && strcmp(argv[i], "--") != 0; i += 2) {
        const char *key = argv[i], *value = i + 1 < argc ? argv[i + 1] : NULL;
        unsigned long long *target = strcmp(key, "--landlock") == 0 ? &abi
                                     : strcmp(key, "--nproc") == 0  ? &nproc
                                     : strcmp(key, "--data") == 0   ? &data
                                                                    : NULL;
        if (value != NULL && strcmp(key, "--write") == 0) {
            paths[count++] = argv[i + 1];
        } else if (value == NULL || target == NULL || !number(value, target)) {
            fprintf(stderr, "gtd sandbox launcher: bad argument %s\n", key);
            return FAILED;
        }
    }
    char **command = argv + i + 1;
    if (i >= argc || *command == NULL) {
        fputs("gtd sandbox launcher: no command\n", stderr);
        return FAILED;
    }
    if (nproc && limit(RLIMIT_NPROC, nproc)) return FAILED;
    if (data && limit(RLIMIT_DATA, data)) return FAILED;
    if (abi && restrict_writes(paths, count, abi)) return FAILED;
    execvp(command[0], command);
    int err = errno;
    fprintf(stderr, "gtd sandbox: cannot run %s: %s\n", command[0], strerror(err));
    return err == ENOENT ? 127 : FAILED;
}
