/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Records: the calls a template wrapper got before its key, encoded to be
 * compared by content, hashed and replayed (layer.h).
 */
#include <string.h>
#include <openssl/params.h>

#include "layer/layer.h"

/* the longest parameter name recorded */
#define KC_TNAME_MAX 64

uint64_t kc_trec_hash(uint64_t h, const uint64_t *p, size_t nbytes)
{
    size_t i;

    for (i = 0; i < nbytes / 8; i++) {
        h = (h ^ p[i]) * 0x9e3779b97f4a7c15ULL;
        h ^= h >> 31;
    }
    return h;
}

size_t kc_trec_recordable(const OSSL_PARAM *p)
{
    size_t n = strlen(p->key);

    if (n == 0 || n >= KC_TNAME_MAX || p->data_size >= KC_TREC_MAX)
        return 0;
    switch (p->data_type) {
    case OSSL_PARAM_INTEGER:
    case OSSL_PARAM_UNSIGNED_INTEGER:
    case OSSL_PARAM_REAL:
    case OSSL_PARAM_OCTET_STRING:
        return n;
    case OSSL_PARAM_UTF8_STRING:
        if (kc_trec_utf8_ends(p))
            return n;
    }
    return 0;
}

int kc_trec_put(unsigned char *buf, size_t cap, size_t *len, int tag,
                const OSSL_PARAM *p, size_t namelen)
{
    size_t datalen = 0, need, npad;
    KC_TITEM it;

    memset(&it, 0, sizeof(it));
    it.tag = (uint16_t)tag;
    namelen++;
    it.namelen = (uint16_t)namelen;
    it.type = p->data_type | (p->data == NULL ? KC_T_NULL : 0);
    it.size = p->data_size;
    if (tag == KC_T_PARAM && p->data != NULL)
        datalen = p->data_size + 1;
    npad = KC_TPAD8(namelen);
    need = sizeof(it) + npad + KC_TPAD8(datalen);
    if (need > cap - *len)
        return 0;
    buf += *len;
    memcpy(buf, &it, sizeof(it));
    /* the name's last word, zero padded, then the name over it */
    memset(buf + sizeof(it) + npad - 8, 0, 8);
    memcpy(buf + sizeof(it), p->key, namelen);
    if (datalen > 0) {
        buf += sizeof(it) + npad;
        memset(buf + KC_TPAD8(datalen) - 8, 0, 8);
        if (p->data_size > 0)
            memcpy(buf, p->data, p->data_size);
    }
    *len += need;
    return 1;
}

int kc_trec_marker(unsigned char *buf, size_t cap, size_t *len, int tag,
                   uint32_t type)
{
    KC_TITEM it = { (uint16_t)tag, 0, type, 0 };

    if (sizeof(it) > cap - *len)
        return 0;
    memcpy(buf + *len, &it, sizeof(it));
    *len += sizeof(it);
    return 1;
}

size_t kc_trec_get(const unsigned char *buf, size_t off, KC_TITEM *it,
                   OSSL_PARAM *p)
{
    const unsigned char *name, *data;

    memcpy(it, buf + off, sizeof(*it));
    if (it->tag != KC_T_PARAM && it->tag != KC_T_SIG)
        return off + sizeof(*it);
    name = buf + off + sizeof(*it);
    data = name + KC_TPAD8(it->namelen);
    p->key = (const char *)name;
    p->data_type = it->type & ~KC_T_NULL;
    p->data = (it->type & KC_T_NULL) != 0 ? NULL : (void *)data;
    p->data_size = (size_t)it->size;
    p->return_size = OSSL_PARAM_UNMODIFIED;
    if (it->tag == KC_T_SIG || (it->type & KC_T_NULL) != 0)
        return (size_t)(data - buf);
    return (size_t)(data - buf) + KC_TPAD8((size_t)it->size + 1);
}

size_t kc_trec_match(const unsigned char *rec, size_t off, size_t len,
                     int tag, uint32_t type, int item,
                     const OSSL_PARAM *const *ps, size_t n)
{
    size_t i;
    KC_TITEM it;

    if ((off = kc_trec_marker_at(rec, off, len, tag, type)) == 0)
        return 0;
    for (i = 0; i < n; i++)
        if ((off = kc_trec_item_at(rec, off, len, item, ps[i])) == 0)
            return 0;
    /* and the call ends there */
    if (len - off >= sizeof(it)) {
        memcpy(&it, rec + off, sizeof(it));
        if (it.tag == item)
            return 0;
    }
    return off;
}

int kc_trec_last_utf8(const unsigned char *rec, size_t len, const char *name,
                      const char *with, const char **value,
                      const char **with_value)
{
    const char *cur_with = NULL;
    size_t off = 0;
    int found = 0, in_call = 0;
    OSSL_PARAM p;
    KC_TITEM it;

    *value = *with_value = NULL;
    while (off < len) {
        off = kc_trec_get(rec, off, &it, &p);
        if (it.tag != KC_T_PARAM && it.tag != KC_T_SIG) {
            in_call = 0;
            cur_with = NULL;
            continue;
        }
        /* the same call's |with| may come after |name| */
        if (with != NULL && strcmp(p.key, with) == 0
            && p.data_type == OSSL_PARAM_UTF8_STRING) {
            cur_with = p.data;
            if (in_call)
                *with_value = cur_with;
        }
        if (strcmp(p.key, name) == 0) {
            if (p.data_type != OSSL_PARAM_UTF8_STRING || p.data == NULL)
                return 0;
            *value = p.data;
            *with_value = cur_with;
            in_call = 1;
            found = 1;
        }
    }
    return found;
}

int kc_trec_replay_calls(const unsigned char *rec, size_t from, size_t to,
                         KC_TCALL_FN *call, const void *fns, void *ctx)
{
    /* a cipher's keyless init records its IV as an item before its params */
    OSSL_PARAM p[KC_TCALL_MAX + 2];
    KC_TITEM it, mark;
    size_t off = from, n = 0;
    int open = 0;

    while (off < to) {
        off = kc_trec_get(rec, off, &it, &p[n]);
        if (it.tag == KC_T_PARAM) {
            n++;
            continue;
        }
        if (open && !call(fns, ctx, &mark, p, n))
            return 0;
        mark = it;
        open = 1;
        n = 0;
    }
    return !open || call(fns, ctx, &mark, p, n);
}
