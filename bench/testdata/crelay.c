/*
 * crelay: the floor of any stdio relay on this machine, for comparison
 * with gatehouse-bench's variants (docs/benchmarks.md, "The floor").
 *
 * It starts the command after "--" with pipes for its stdin and stdout
 * and copies bytes both ways with two threads doing blocking read(2) and
 * write(2) on 64 KiB buffers: no framing, no parsing, no runtime. Every
 * argument before "--" is ignored, so it takes gatehouse's command line
 * and can be measured as a candidate:
 *
 *   cc -O2 -pthread -o /tmp/crelay bench/testdata/crelay.c
 *   go run ./bench/cmd/gatehouse-bench -phases latency,throughput \
 *       -variants null-relay,gw-noledger,candidate -candidate /tmp/crelay
 *
 * Exit status: the command's, 64 without "--", 71 when it cannot start.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct pump { int from, to; };

static void *pump(void *arg) {
    struct pump *p = arg;
    static __thread char buf[65536];
    for (;;) {
        ssize_t n = read(p->from, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(p->to, buf + off, (size_t)(n - off));
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) goto done;
            off += w;
        }
    }
done:
    close(p->to);
    return NULL;
}

int main(int argc, char **argv) {
    int i = 1;
    while (i < argc && strcmp(argv[i], "--") != 0) i++;
    if (i + 1 >= argc) {
        fprintf(stderr, "usage: crelay [ignored...] -- COMMAND [ARGS...]\n");
        return 64;
    }
    int to[2], from[2];
    if (pipe(to) != 0 || pipe(from) != 0) { perror("crelay: pipe"); return 71; }
    pid_t pid = fork();
    if (pid < 0) { perror("crelay: fork"); return 71; }
    if (pid == 0) {
        dup2(to[0], 0);
        dup2(from[1], 1);
        close(to[0]); close(to[1]); close(from[0]); close(from[1]);
        execvp(argv[i + 1], argv + i + 1);
        perror("crelay: exec");
        _exit(71);
    }
    close(to[0]);
    close(from[1]);
    struct pump up = {0, to[1]}, down = {from[0], 1};
    pthread_t t1, t2;
    pthread_create(&t1, NULL, pump, &up);
    pthread_create(&t2, NULL, pump, &down);
    pthread_join(t2, NULL); /* the server closed its stdout */
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}
