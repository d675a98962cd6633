/* config_files.c - the files the loader reads: the ini file itself (step 1
 * of a load), and the password and TLS files the ini file names.
 *
 * Every one is a name from the user, so a failure says which file and why,
 * with the codes config.h promises (ENOENT, EACCES).  The ini file and a
 * password file are checked on the descriptor they are read from, so that
 * a directory, a FIFO or a device is refused, not read as empty or waited
 * on forever; a TLS file is only checked here, and read by OpenSSL when a
 * client opens (tls.c).  Relative names in the ini file are relative to
 * the ini file's directory. */
#include "rdl_build.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/config_int.h"
#include "base/log.h"

/* A config file is a few hundred bytes; anything this large is a mistake
 * (or an attack on the loader), and the cap bounds the lint pass. */
#define RDL_CONFIG_FILE_MAX (1024 * 1024)

/* Only the first line of password_file is read; a longer "line" is not a
 * password file. */
#define RDL_PASSWORD_MAX 65536

/* Map an open(2) failure on a file the user named to our codes. */
static int open_errno(int e)
{
    switch (e) {
    case ENOENT:
    case ENOTDIR:
        return ENOENT;
    case ENOMEM:
        return ENOMEM;
    default:
        /* EACCES, EPERM, ELOOP, EIO...: it exists but cannot be read. */
        return EACCES;
    }
}

/* Read the whole config file into a NUL-terminated buffer (*len bytes,
 * which may contain NULs).  Returns 0, ENOENT, EACCES, EINVAL or ENOMEM,
 * logged. */
int rdl_config_read_file(const char *path, char **out, size_t *len)
{
    struct stat st;
    char *buf;
    size_t n = 0, cap;
    int fd, e;

    *out = NULL;
    *len = 0;
    /* O_NONBLOCK: opening a FIFO must not hang; it is refused below. */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        e = errno;
        rdl_log(RDLOCK_LOG_ERROR, "config %s: cannot open: %s", path, strerror(e));
        return open_errno(e);
    }
    if (fstat(fd, &st) != 0) {
        e = errno;
        close(fd);
        rdl_log(RDLOCK_LOG_ERROR, "config %s: cannot stat: %s", path, strerror(e));
        return open_errno(e);
    }
    /* iniparser reads the file again by name, so it must be a plain file:
     * a directory would load as an empty file, a pipe would be drained. */
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        rdl_log(RDLOCK_LOG_ERROR, "config %s: not a regular file", path);
        return EINVAL;
    }
    if (st.st_size > RDL_CONFIG_FILE_MAX) {
        close(fd);
        rdl_log(RDLOCK_LOG_ERROR, "config %s: larger than %d bytes", path, RDL_CONFIG_FILE_MAX);
        return EINVAL;
    }
    /* Sized from st_size, grown if the file grows meanwhile, never past
     * the cap (+1 byte to notice a file over it). */
    cap = (size_t)st.st_size + 1;
    if (cap < 4096)
        cap = 4096;
    buf = malloc(cap + 1);
    if (buf == NULL) {
        close(fd);
        return ENOMEM;
    }
    for (;;) {
        ssize_t r;

        if (n == cap) {
            size_t ncap = cap * 2 > RDL_CONFIG_FILE_MAX + 1 ? RDL_CONFIG_FILE_MAX + 1 : cap * 2;
            char *nbuf = malloc(ncap + 1);
            if (nbuf == NULL) {
                close(fd);
                explicit_bzero(buf, n);
                free(buf);
                return ENOMEM;
            }
            memcpy(nbuf, buf, n);
            explicit_bzero(buf, n);
            free(buf);
            buf = nbuf;
            cap = ncap;
        }
        r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            e = errno;
            close(fd);
            explicit_bzero(buf, n);
            free(buf);
            rdl_log(RDLOCK_LOG_ERROR, "config %s: cannot read: %s", path, strerror(e));
            return e == ENOMEM ? ENOMEM : EACCES;
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n > RDL_CONFIG_FILE_MAX) {
            close(fd);
            explicit_bzero(buf, n);
            free(buf);
            rdl_log(RDLOCK_LOG_ERROR, "config %s: larger than %d bytes", path, RDL_CONFIG_FILE_MAX);
            return EINVAL;
        }
    }
    close(fd);
    buf[n] = '\0';
    *out = buf;
    *len = n;
    return 0;
}

/* Relative paths in the file (socket, password_file) are relative to the
 * directory holding the file, not to the process's working directory,
 * which for a service is usually '/'.  Returns a new string or NULL. */
char *rdl_config_resolve_path(const char *file, const char *p)
{
    const char *slash = strrchr(file, '/');
    size_t dlen;
    char *out;

    if (p[0] == '/' || slash == NULL)
        return strdup(p);
    dlen = (size_t)(slash - file) + 1;
    out = malloc(dlen + strlen(p) + 1);
    if (out == NULL)
        return NULL;
    memcpy(out, file, dlen);
    strcpy(out + dlen, p);
    return out;
}

/* Read the first line of password_file (of [section]) into *out.  Returns
 * 0, ENOENT, EACCES, EINVAL or ENOMEM, logged (never the content). */
static int read_password_file(const rdl_load_t *ld, const char *section, const char *pf, char **out)
{
    struct stat st;
    char *buf;
    size_t n = 0, linelen;
    char *nl;
    int fd, e, rc = 0;

    *out = NULL;
    fd = open(pf, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        e = errno;
        rdl_config_key_problem(ld, section, "password_file", "cannot open %s: %s", pf, strerror(e));
        return open_errno(e);
    }
    /* A directory or device is not a readable password file; refusing
     * them also keeps a FIFO or /dev/zero from hanging the load. */
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        rdl_config_key_problem(ld, section, "password_file", "%s is not a readable regular file", pf);
        return EACCES;
    }
    buf = malloc(RDL_PASSWORD_MAX + 2);
    if (buf == NULL) {
        close(fd);
        return ENOMEM;
    }
    while (n < RDL_PASSWORD_MAX + 1 && memchr(buf, '\n', n) == NULL) {
        ssize_t r = read(fd, buf + n, RDL_PASSWORD_MAX + 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            e = errno;
            rdl_config_key_problem(ld, section, "password_file", "cannot read %s: %s", pf, strerror(e));
            rc = e == ENOMEM ? ENOMEM : EACCES;
            goto out;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    nl = memchr(buf, '\n', n);
    if (nl == NULL && n > RDL_PASSWORD_MAX) {
        rdl_config_key_problem(ld, section, "password_file", "first line of %s is longer than %d bytes",
                               pf, RDL_PASSWORD_MAX);
        rc = EINVAL;
        goto out;
    }
    linelen = nl != NULL ? (size_t)(nl - buf) : n;
    if (linelen > 0 && buf[linelen - 1] == '\r')
        linelen--;
    if (linelen == 0) {
        rdl_config_key_problem(ld, section, "password_file", "%s: the first line is empty", pf);
        rc = EINVAL;
        goto out;
    }
    if (memchr(buf, '\0', linelen) != NULL) {
        rdl_config_key_problem(ld, section, "password_file", "%s: the first line contains a NUL byte", pf);
        rc = EINVAL;
        goto out;
    }
    *out = malloc(linelen + 1);
    if (*out == NULL) {
        rc = ENOMEM;
        goto out;
    }
    memcpy(*out, buf, linelen);
    (*out)[linelen] = '\0';
out:
    close(fd);
    explicit_bzero(buf, RDL_PASSWORD_MAX + 2);
    free(buf);
    return rc;
}

/* [section] password_file pf (NULL: not given) into *pw, unless password
 * was given too (a problem).  0 or ENOENT, EACCES, ENOMEM; EINVAL-class
 * problems are counted in ld->problems. */
int rdl_config_password_from_file(rdl_load_t *ld, const char *section, const char *pf, char **pw)
{
    char *p;
    int rc;

    if (pf == NULL)
        return 0;
    if (*pw != NULL) {
        /* Two sources for one secret: refusing is clearer than a silent
         * precedence rule. */
        rdl_config_key_problem(ld, section, "password_file", "give either password or password_file, not both");
        ld->problems++;
        return 0;
    }
    p = rdl_config_resolve_path(ld->file, pf);
    if (p == NULL)
        return ENOMEM;
    rc = read_password_file(ld, section, p, pw);
    free(p);
    if (rc == EINVAL) {
        ld->problems++;
        rc = 0;
    }
    return rc;
}

/* A TLS file key: the path resolved against the file's directory, and a
 * readable regular file (or directory, for the CA dir) there.  0, ENOENT,
 * EACCES or ENOMEM (logged with the key's line). */
int rdl_config_tls_path(rdl_load_t *ld, const char *key, char **path, bool dir)
{
    struct stat st;
    char *p;

    if (*path == NULL)
        return 0;
    if ((p = rdl_config_resolve_path(ld->file, *path)) == NULL)
        return ENOMEM;
    free(*path);
    *path = p;
    if (stat(p, &st) != 0) {
        int e = errno;
        rdl_config_key_problem(ld, "redis", key, "cannot use %s: %s", p, strerror(e));
        return open_errno(e);
    }
    if (dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
        rdl_config_key_problem(ld, "redis", key, "%s is not a %s", p, dir ? "directory" : "regular file");
        return EACCES;
    }
    if (access(p, R_OK | (dir ? X_OK : 0)) != 0) {
        int e = errno;
        rdl_config_key_problem(ld, "redis", key, "cannot read %s: %s", p, strerror(e));
        return open_errno(e);
    }
    return 0;
}
