/* fuzz_config.c - libFuzzer target for the ini loader (src/base/config.c).
 *
 * Each input is written to a file and loaded with rdl_config_load(), which
 * must never crash, leak or hit undefined behaviour, whatever the bytes.
 * Built and run by tests/fuzz/run-fuzz.sh.
 *
 * Besides the sanitizers, three oracles turn silent misbehaviour into a
 * crash the fuzzer reports:
 *  - a failed load leaves the config all zero (config.h promises it);
 *  - a successful load yields the invariants config.h promises;
 *  - no log line comes from iniparser's own error callback: config.c
 *    predicts every line iniparser rejects and reports it itself (without
 *    the line text), so an "iniparser:" message means that prediction
 *    missed a case. */
#include "rdl_build.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/config.h"
#include "base/log.h"
#include "rdlock.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[4096];

/* config.c's fallback for what iniparser itself reports is the only line
 * shaped "config PATH: iniparser: ... (line text not shown: ...)"; names
 * from the input cannot produce it (they are logged after a section, a
 * line number or before "unknown ..." / "key outside any section"). */
static void check_log(int level, const char *msg, void *arg)
{
    static const char tail[] = "(line text not shown: it may hold a secret)";
    char head[sizeof path + 32];
    size_t n = strlen(msg);

    (void)level;
    (void)arg;
    snprintf(head, sizeof head, "config %s: iniparser: ", path);
    if (strncmp(msg, head, strlen(head)) == 0 && n >= sizeof tail - 1 &&
        strcmp(msg + n - (sizeof tail - 1), tail) == 0) {
        fprintf(stderr, "fuzz_config: iniparser reported what config.c did not predict: %s\n",
                msg);
        abort();
    }
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *tmp = getenv("TMPDIR");
    char dir[4000];

    (void)argc;
    (void)argv;
    /* run-fuzz.sh points TMPDIR into its work dir, removed afterwards. */
    snprintf(dir, sizeof dir, "%s/rdl-fuzz-config-XXXXXX", tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        abort();
    }
    snprintf(path, sizeof path, "%s/fuzz.ini", dir);
    /* The input names no file of its own; a relative password_file or
     * socket resolves inside this private directory. */
    unsetenv("RDLOCK_CONF");
    rdlock_set_logger(check_log, NULL);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const rdl_config_t zero;
    rdl_config_t cfg;
    size_t off = 0;
    int fd, rc;

    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        abort();
    while (off < size) {
        ssize_t w = write(fd, data + off, size - off);
        if (w <= 0)
            abort();
        off += (size_t)w;
    }
    close(fd);

    memset(&cfg, 0x5a, sizeof cfg);
    rc = rdl_config_load(&cfg, path, NULL);
    if (rc != 0) {
        if (memcmp(&cfg, &zero, sizeof cfg) != 0) {
            fprintf(stderr, "fuzz_config: rc %d left *cfg non-zero\n", rc);
            abort();
        }
        if (rc != EINVAL && rc != ENOENT && rc != EACCES && rc != ENOMEM) {
            fprintf(stderr, "fuzz_config: unexpected rc %d\n", rc);
            abort();
        }
    } else {
        if (cfg.host == NULL || cfg.key_prefix == NULL || cfg.source == NULL ||
            strpbrk(cfg.key_prefix, "{}") != NULL || cfg.key_prefix[0] == '\0' ||
            cfg.port < 1 || cfg.port > 65535 || cfg.db < 0 || cfg.lease_ms < 10 ||
            (cfg.watchdog_interval_ms != 0 && cfg.watchdog_interval_ms >= cfg.lease_ms) ||
            (cfg.max_hold_ms != 0 && cfg.max_hold_ms < cfg.lease_ms) ||
            (cfg.wait_replicas < 0 && cfg.wait_replicas != RDL_WAIT_ALL) || cfg.wait_replicas > 1000 || cfg.wait_timeout_ms < 1 ||
            (rdl_config_wait_on(&cfg) && cfg.wait_timeout_ms >= cfg.command_timeout_ms) ||
            (cfg.sentinel_master != NULL) != (cfg.nsentinels > 0) || (cfg.nsentinels > 0 && cfg.socket != NULL) ||
            cfg.nsentinels < 0 || cfg.nsentinels > RDL_SENTINELS_MAX) {
            fprintf(stderr, "fuzz_config: a loaded config breaks an invariant\n");
            abort();
        }
    }
    rdl_config_free(&cfg);
    return 0;
}
