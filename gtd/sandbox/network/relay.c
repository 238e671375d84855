/* The proxy's copy loop (gtd/sandbox/network/relay.py), one direction of one relayed connection, without the GIL.
 *
 * relay.py calls gtd_relay_copy through ctypes (which releases the GIL for the whole call) from the
 * direction's thread, after it made both sockets blocking and switched Nagle off on dst; Python keeps the
 * socket objects alive until the call returns. Same loop as relay.py's Python one: blocking recv and send,
 * a small buffer first and, once a read fills it, a bulk one (two kept for the next connections), EOF or
 * any error ends it with shutdown(dst, SHUT_WR) so the half-close is passed on.
 *
 * Built by gtd/sandbox/network/nativerelay.py into gtd's state dir; loaded from a checked copy in a memfd.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/types.h>

#define SPARES 2

struct bulk {
    size_t size;
    char data[];
};

static struct bulk *spare[SPARES];  /* taken and given back with atomic exchanges: no lock a fork could leave held */

static struct bulk *take_bulk(size_t size)
{
    for (int i = 0; i < SPARES; i++) {
        struct bulk *b = __atomic_exchange_n(&spare[i], NULL, __ATOMIC_ACQ_REL);
        if (b && b->size == size)
            return b;
        free(b);
    }
    struct bulk *b = malloc(sizeof(struct bulk) + size);
    if (b)
        b->size = size;
    return b;
}

static void give_bulk(struct bulk *b)
{
    for (int i = 0; i < SPARES; i++) {
        struct bulk *empty = NULL;
        if (__atomic_compare_exchange_n(&spare[i], &empty, b, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            return;
    }
    free(b);
}

static int send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t sent = send(fd, p, n, MSG_NOSIGNAL);
        if (sent < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += sent;
        n -= (size_t)sent;
    }
    return 0;
}

/* Copy src to dst until EOF or an error, then half-close dst. Returns the bytes copied. */
long long gtd_relay_copy(int src, int dst, size_t small_size, size_t bulk_size)
{
    char *small = malloc(small_size), *buf = small;
    size_t size = small_size;
    struct bulk *bulk = NULL;
    long long copied = 0;

    while (buf) {
        ssize_t n = recv(src, buf, size, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0 || send_all(dst, buf, (size_t)n) < 0)
            break;
        copied += n;
        if ((size_t)n == size && bulk == NULL && (bulk = take_bulk(bulk_size)) != NULL) {  /* bulk data is queued */
            buf = bulk->data;
            size = bulk_size;
        }
    }
    shutdown(dst, SHUT_WR);
    free(small);
    if (bulk)
        give_bulk(bulk);
    return copied;
}
