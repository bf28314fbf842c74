// SPDX-License-Identifier: MIT
// reactor::tls::Context and the certificate maker: what a context is made
// of, and every refusal, with a message that names the file or setting and
// carries OpenSSL's text. No loop is involved: these run once per backend
// like the other suites, and cost nothing.
#include <boost/test/unit_test.hpp>

#include <string>

#include <reactor/tls/certificate_maker.hpp>
#include <reactor/tls/context.hpp>

#include "support/tls_fixtures.hpp"

namespace tls = reactor::tls;
using reactor_test::pki;

namespace {

// The message of the tls::Error that `make` throws ("" if none).
template <class Make>
std::string error_of(Make make) {
    try {
        make();
    } catch (const tls::Error& e) {
        return e.what();
    }
    return "";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

}  // namespace

BOOST_AUTO_TEST_CASE(identities_from_pem_and_from_files_make_working_contexts) {
    reactor_test::TempDir dir;
    auto from_pem = tls::Context::server(reactor_test::server_options());
    BOOST_TEST((from_pem->role() == tls::Context::Role::server));
    BOOST_TEST(!from_pem->verifies_peer());
    tls::ServerOptions files;
    files.identity = tls::Identity::from_files(dir.write("chain.pem", pki().server.certificate_pem),
                                               dir.write("key.pem", pki().server.key_pem));
    BOOST_TEST(tls::Context::server(files)->native_handle() != nullptr);
    tls::ClientOptions client;
    client.trust.ca_file = dir.write("ca.pem", pki().ca.certificate_pem());
    auto c = tls::Context::client(client);
    BOOST_TEST((c->role() == tls::Context::Role::client));
    BOOST_TEST(c->verifies_peer());
    BOOST_TEST(tls::Context::client()->verifies_peer());  // the system's store, verification on
}

BOOST_AUTO_TEST_CASE(a_missing_certificate_or_key_file_is_named) {
    tls::ServerOptions o;
    o.identity = tls::Identity::from_files("/nonexistent/chain.pem", "/nonexistent/key.pem");
    const std::string chain = error_of([&] { tls::Context::server(o); });
    BOOST_TEST(contains(chain, "certificate chain file '/nonexistent/chain.pem'"), chain);
    BOOST_TEST(contains(chain, "error:"), chain);  // OpenSSL's own text follows
    reactor_test::TempDir dir;
    o.identity.chain_file = dir.write("chain.pem", pki().server.certificate_pem);
    const std::string key = error_of([&] { tls::Context::server(o); });
    BOOST_TEST(contains(key, "private key file '/nonexistent/key.pem'"), key);
}

BOOST_AUTO_TEST_CASE(a_key_that_does_not_match_its_certificate_is_refused) {
    tls::ServerOptions o;
    o.identity = tls::Identity::from_pem(pki().server.certificate_pem, pki().alt.key_pem);
    const std::string e = error_of([&] { tls::Context::server(o); });
    BOOST_TEST(contains(e, "private key does not match its certificate"), e);
    BOOST_TEST(contains(e, "key values mismatch"), e);  // OpenSSL's reason
}

BOOST_AUTO_TEST_CASE(bad_pem_and_bad_settings_are_refused_clearly) {
    tls::ServerOptions o;
    BOOST_TEST(contains(error_of([&] { tls::Context::server(o); }), "needs a certificate and key"));
    o.identity = tls::Identity::from_pem("not a certificate", pki().server.key_pem);
    BOOST_TEST(contains(error_of([&] { tls::Context::server(o); }), "cannot use the server certificate PEM"));
    o.identity = tls::Identity::from_pem(pki().server.certificate_pem, "not a key");
    BOOST_TEST(contains(error_of([&] { tls::Context::server(o); }), "cannot read the server private key PEM"));
    o = reactor_test::server_options();
    o.min_version = tls::Version::tls1_3;
    o.max_version = tls::Version::tls1_2;
    BOOST_TEST(contains(error_of([&] { tls::Context::server(o); }), "minimum protocol version is above the maximum"));
    o = reactor_test::server_options();
    o.alpn = {std::string(256, 'x')};
    BOOST_TEST(contains(error_of([&] { tls::Context::server(o); }), "must be 1 to 255 bytes"));
    o = reactor_test::server_options();
    o.client_auth = tls::ClientAuth::require;
    BOOST_TEST(contains(error_of([&] { tls::Context::server(o); }), "needs client_trust"));
    tls::ClientOptions c;
    c.trust.ca_file = "/nonexistent/ca.pem";
    BOOST_TEST(contains(error_of([&] { tls::Context::client(c); }), "CA file '/nonexistent/ca.pem'"));
    c.trust.ca_file.clear();
    c.trust.ca_pem = "no certificate here";
    BOOST_TEST(contains(error_of([&] { tls::Context::client(c); }), "no certificate in the trusted CA PEM"));
}

BOOST_AUTO_TEST_CASE(the_certificate_maker_issues_what_it_says) {
    const auto& server = pki().server;
    // The chain is the leaf, then the CA.
    BOOST_TEST(server.certificate_pem.ends_with(pki().ca.certificate_pem()));
    BOOST_TEST(server.key_pem.starts_with("-----BEGIN PRIVATE KEY-----"));
    auto self = tls::self_signed({"localhost", "127.0.0.1"});
    BOOST_TEST(self.certificate_pem.starts_with("-----BEGIN CERTIFICATE-----"));
    tls::ServerOptions o;
    o.identity = self.identity();
    BOOST_TEST(tls::Context::server(o) != nullptr);  // key and certificate match
    BOOST_CHECK_THROW(tls::self_signed({}), tls::Error);
    BOOST_CHECK_THROW(pki().ca.issue_server({}), tls::Error);
}
