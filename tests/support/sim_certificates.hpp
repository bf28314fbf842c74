// SPDX-License-Identifier: MIT
// The certificates of the simulated TLS worlds (test_sim_tls,
// test_sim_hunt_web): a CA, and the certificate of the host named "server",
// made once per test process. Make them before any world runs: their keys
// need the system's randomness, which a world refuses (sim_guard).
#pragma once

#include <reactor/tls/certificate_maker.hpp>

namespace reactor_test {

struct SimCertificates {
    reactor::tls::CertificateAuthority ca;
    reactor::tls::IssuedCertificate server = ca.issue_server({"server"});
};

inline const SimCertificates& sim_certificates() {
    static const SimCertificates made;
    return made;
}

}  // namespace reactor_test
