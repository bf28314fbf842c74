// SPDX-License-Identifier: MIT
// OpenSSL's randomness from a world's seed (reactor/testing/sim/tls_randomness.hpp).
// RAND_METHOD is deprecated in OpenSSL 3 in favour of providers, but it is the
// one hook that RAND_bytes_ex and RAND_priv_bytes_ex (3.0) still honour for
// every caller, the default provider's key generation included, without
// writing a provider: the deprecation is silenced for this file only.
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include "reactor/testing/sim/tls_randomness.hpp"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <climits>
#include <cstddef>
#include <stdexcept>

#include "reactor/detail/world_mark.hpp"

namespace reactor::testing::sim {
namespace {

// Outside a world: OpenSSL's public DRBG, asked directly (RAND_OpenSSL()'s
// own bytes would call RAND_bytes_ex, which would call us again).
int draw(unsigned char* out, int length) {
    if (length < 0) return 0;
    if (const auto* mark = reactor::detail::world_mark(); mark != nullptr && mark->fill_random != nullptr) {
        mark->fill_random(mark->random_context, out, static_cast<std::size_t>(length));
        return 1;
    }
    EVP_RAND_CTX* drbg = RAND_get0_public(nullptr);
    return drbg != nullptr && EVP_RAND_generate(drbg, out, static_cast<std::size_t>(length), 0, 0, nullptr, 0) == 1;
}

// Seeding the world's stream would make it depend on more than the seed:
// what is offered is dropped, and the generator is always ready.
int seed(const void*, int) { return 1; }
int add(const void*, int, double) { return 1; }
int status() { return 1; }

const RAND_METHOD kMethod = {seed, draw, nullptr, add, draw, status};

const RAND_METHOD* g_previous = nullptr;
bool g_installed = false;

}  // namespace

TlsRandomness::TlsRandomness() {
    if (g_installed) throw std::logic_error("sim::TlsRandomness: one is installed already");
    g_previous = RAND_get_rand_method();
    if (RAND_set_rand_method(&kMethod) != 1) throw std::runtime_error("sim::TlsRandomness: RAND_set_rand_method failed");
    g_installed = true;
}

TlsRandomness::~TlsRandomness() {
    RAND_set_rand_method(g_previous);
    g_installed = false;
}

}  // namespace reactor::testing::sim
