/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fork children that hang (docs/limits.md): in each of N rounds three
 * threads key 48 HMAC keys three times each and exit, while the main
 * thread forks a child every 200 us from their start until they are
 * joined; each child computes one HMAC and exits (OPENSSL_cleanup() takes
 * OpenSSL's thread-stop lock) under alarm(5).  Prints how many hung.
 * With "rand", each thread also draws 16 bytes from RAND_bytes() once,
 * which registers the default's own thread-stop handler (its DRBGs).
 *
 *   cc -O1 -o /tmp/forkhang tools/forkhang.c -lcrypto -lpthread
 *   OPENSSL_CONF=build/keycache-test.cnf /tmp/forkhang 400 [rand]
 *   OPENSSL_CONF=/dev/null /tmp/forkhang 400 [rand]  (the default alone)
 */
#define _GNU_SOURCE
#define OPENSSL_SUPPRESS_DEPRECATED    /* HMAC(): what programs call */
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int draw;

static void *worker(void *arg)
{
    unsigned char key[32], md[32], msg[64] = "m", b[16];
    unsigned int len;
    int k, r;

    for (k = 0; k < 48; k++) {
        memset(key, k + (int)(long)arg, sizeof(key));
        for (r = 0; r < 3; r++)
            HMAC(EVP_sha256(), key, 32, msg, sizeof(msg), md, &len);
    }
    if (draw)
        RAND_bytes(b, sizeof(b));
    return NULL;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 50, i, j, hung = 0, kids = 0, st, live;
    unsigned char md[32];
    unsigned int len;

    draw = argc > 2 && strcmp(argv[2], "rand") == 0;
    HMAC(EVP_sha256(), "k", 1, (const unsigned char *)"m", 1, md, &len);
    for (i = 0; i < n; i++) {
        pthread_t t[3];
        int done[3] = { 0, 0, 0 };
        pid_t pid[64];
        int np = 0;

        for (j = 0; j < 3; j++)
            pthread_create(&t[j], NULL, worker, (void *)(long)j);
        do {
            if (np < 64 && (pid[np] = fork()) == 0) {
                alarm(5);
                HMAC(EVP_sha256(), "k", 1, (const unsigned char *)"m", 1, md, &len);
                exit(0);
            }
            np += np < 64;
            usleep(200);
            for (live = 0, j = 0; j < 3; j++)
                if (!done[j])
                    live += !(done[j] = pthread_tryjoin_np(t[j], NULL) == 0);
        } while (live > 0);
        for (j = 0; j < np; j++) {
            waitpid(pid[j], &st, 0);
            kids++;
            if (WIFSIGNALED(st))
                hung++;
        }
    }
    printf("%d of %d children hung\n", hung, kids);
    return 0;
}
