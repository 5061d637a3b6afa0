/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Wycheproof's JSON vector files, for the tests that link cJSON
 * (test_vectors, test_fam_vectors, test_cfam): header-only, so the other
 * tests' helpers need no cJSON.
 */
#ifndef KC_JSON_H
#define KC_JSON_H

#include <stdlib.h>
#include <cjson/cJSON.h>

#include "kc_test.h"

/* A JSON file below the vectors folder, parsed; NULL if not (said). */
static inline cJSON *kct_json_load(const char *name)
{
    char *text = kct_file_text(kct_vectors_dir(), name);
    cJSON *root = text != NULL ? cJSON_Parse(text) : NULL;

    if (text != NULL && root == NULL)
        fprintf(stderr, "cannot parse %s/%s\n", kct_vectors_dir(), name);
    free(text);
    return root;
}

/* The hex string o[k] as bytes (to free()); NULL if o has none. */
static inline unsigned char *kct_json_hex(const cJSON *o, const char *k,
                                          size_t *len)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, k);

    *len = 0;
    return cJSON_IsString(s) ? kct_unhex(s->valuestring, len) : NULL;
}

#endif
