/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kcdispatch - where the default provider's algorithm functions are.
 *
 * Prints one line per function of every algorithm the default provider
 * offers (its dispatch tables, as OSSL_PROVIDER_query_operation hands them
 * to libcrypto):
 *
 *   <object> <offset> <operation>.<algorithm>.<function id> <symbol or ->
 *
 * <offset> is the function's address less the object's load address, the
 * form in which callgrind names code that has no symbol.  bench/sharedops.py
 * uses it to give these functions names in a copy of libcrypto, so that a
 * callgrind call chain shows when an operation runs inside the default
 * provider: its dispatch functions are static, and Debian's libcrypto has
 * no symbol table for them.  The last field is the exported symbol at that
 * address, if there is one (SHA1_Update serves as SHA-1's update).
 */
#define _GNU_SOURCE               /* dladdr */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include <openssl/core.h>
#include <openssl/core_dispatch.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/provider.h>

static const char *op_name(int op)
{
  switch (op) {
  case OSSL_OP_DIGEST: return "digest";
  case OSSL_OP_CIPHER: return "cipher";
  case OSSL_OP_MAC: return "mac";
  case OSSL_OP_KDF: return "kdf";
  case OSSL_OP_RAND: return "rand";
  case OSSL_OP_KEYMGMT: return "keymgmt";
  case OSSL_OP_KEYEXCH: return "keyexch";
  case OSSL_OP_SIGNATURE: return "signature";
  case OSSL_OP_ASYM_CIPHER: return "asymcipher";
  case OSSL_OP_KEM: return "kem";
  case OSSL_OP_ENCODER: return "encoder";
  case OSSL_OP_DECODER: return "decoder";
  case OSSL_OP_STORE: return "store";
  default: return NULL;
  }
}

int main(void)
{
  /* a context of its own, so that no configuration can add providers */
  OSSL_LIB_CTX *ctx = OSSL_LIB_CTX_new();
  OSSL_PROVIDER *prov = ctx != NULL ? OSSL_PROVIDER_load(ctx, "default")
                                    : NULL;
  int op, n = 0;

  if (prov == NULL) {
      ERR_print_errors_fp(stderr);
      return 1;
  }
  /* operation ids are small; unknown ones just return NULL */
  for (op = 1; op <= 64; op++) {
      const OSSL_ALGORITHM *alg, *a;
      const char *on = op_name(op);
      int no_cache = 0;
      char opbuf[16];

      if ((alg = OSSL_PROVIDER_query_operation(prov, op, &no_cache)) == NULL)
          continue;
      if (on == NULL) {
          snprintf(opbuf, sizeof(opbuf), "op%d", op);
          on = opbuf;
      }
      for (a = alg; a->algorithm_names != NULL; a++) {
          const OSSL_DISPATCH *d;
          size_t len = strcspn(a->algorithm_names, ":");

          for (d = a->implementation; d->function_id != 0; d++) {
              Dl_info info;
              void *fn = (void *)d->function;

              if (fn == NULL || !dladdr(fn, &info) || info.dli_fbase == NULL)
                  continue;
              printf("%s %#lx %s.%.*s.%d %s\n", info.dli_fname,
                     (unsigned long)((char *)fn - (char *)info.dli_fbase),
                     on, (int)len, a->algorithm_names, d->function_id,
                     info.dli_saddr == fn && info.dli_sname != NULL
                         ? info.dli_sname : "-");
              n++;
          }
      }
      OSSL_PROVIDER_unquery_operation(prov, op, alg);
  }
  OSSL_PROVIDER_unload(prov);
  OSSL_LIB_CTX_free(ctx);
  return n > 0 ? 0 : 1;
}
