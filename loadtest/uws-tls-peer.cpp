// uWebSockets' SSLApp serving /echo over wss: the peer of loadtest/idle-tls.sh, for what an idle
// TLS connection costs beside Hubbub on the same OpenSSL. Our code; uWebSockets itself is fetched
// and built under /tmp, never committed (../shared/bench/README.md; idle-tls.sh builds this file).
// Usage: uws-tls-peer PORT CERT KEY
#include "App.h"
#include <cstdlib>
#include <iostream>
struct PerSocketData {};
int main(int argc, char **argv) {
    int port = argc > 1 ? std::atoi(argv[1]) : 9443;
    uWS::SSLApp app({.key_file_name = argv[3], .cert_file_name = argv[2]});
    app.ws<PerSocketData>("/echo", {
        .compression = uWS::DISABLED, .maxPayloadLength = 1 << 20, .idleTimeout = 0,
        .maxBackpressure = 64 << 20, .closeOnBackpressureLimit = false, .resetIdleTimeoutOnSend = false,
        .sendPingsAutomatically = false,
        .message = [](auto *ws, std::string_view message, uWS::OpCode opCode) { ws->send(message, opCode); },
    }).listen("127.0.0.1", port, [port](auto *ls) { if (!ls) { std::cerr << "cannot listen\n"; std::exit(1); } std::cout << "listening " << port << std::endl; }).run();
}
