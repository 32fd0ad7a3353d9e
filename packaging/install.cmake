# Install layout (FHS) and the .deb: `cmake --install BUILD [--prefix /usr]`, `cpack` (issue 6).
# Included by the top-level CMakeLists.txt. With PREFIX=/usr (the .deb):
#   /usr/bin/loadwatch
#   /usr/lib/loadwatch/lib{ssl,crypto}.so          civetweb TLS on OpenSSL 3 (src/tls_compat)
#   /usr/lib/systemd/system/loadwatch.service
#   /usr/lib/sysusers.d/loadwatch.conf             the loadwatch system user
#   /etc/loadwatch/loadwatch.yml, /etc/default/loadwatch     (conffiles)
#   /usr/share/loadwatch/dashboards/*.json, /usr/share/loadwatch/rules/*.yml   (the mixin)
#   /usr/share/doc/loadwatch/{README.md,service.md}, .../examples/{loadwatch.yml,web-config.example.yml}
# With any other prefix, /etc becomes PREFIX/etc and the unit's paths follow.

# Private libraries: PREFIX/lib/loadwatch (not the multiarch libdir: nothing else links them).
install(TARGETS loadwatch_ssl_compat loadwatch_crypto_compat LIBRARY DESTINATION lib/loadwatch)
set_target_properties(loadwatch PROPERTIES INSTALL_RPATH "$ORIGIN/../lib/loadwatch")

install(FILES systemd/loadwatch.sysusers DESTINATION lib/sysusers.d RENAME loadwatch.conf)
install(DIRECTORY dashboards/grafana/ DESTINATION ${CMAKE_INSTALL_DATADIR}/loadwatch/dashboards
        FILES_MATCHING PATTERN "*.json")
install(DIRECTORY dashboards/rules/ DESTINATION ${CMAKE_INSTALL_DATADIR}/loadwatch/rules
        FILES_MATCHING PATTERN "*.yml")
install(FILES README.md docs/service.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES config/loadwatch.yml config/web-config.example.yml
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)
# The unit and /etc: their paths depend on the prefix, known only at install time.
install(CODE "set(LOADWATCH_SOURCE_DIR \"${CMAKE_SOURCE_DIR}\")
set(LOADWATCH_BINARY_DIR \"${CMAKE_BINARY_DIR}\")
set(LOADWATCH_BINDIR \"${CMAKE_INSTALL_BINDIR}\")
set(LOADWATCH_DOCDIR \"${CMAKE_INSTALL_DOCDIR}\")")
install(SCRIPT packaging/install-prefixed.cmake)

# --- the .deb ----------------------------------------------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME loadwatch)
set(CPACK_PACKAGE_VENDOR loadwatch)
set(CPACK_PACKAGE_CONTACT "loadwatch maintainers <loadwatch@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Prometheus exporter for hosts under load, stress and soak tests")
set(CPACK_PACKAGE_DESCRIPTION
    "One daemon per host that samples per-process truth for the system under test, the mock and
the load generator (RSS, CPU, fds vs limit, threads, restarts), host pressure (CPU modes,
softirq, TCP states, TIME_WAIT and ephemeral ports, accept queues, tunables) and the mock's and
generator's own numbers, on one /metrics endpoint, with Grafana dashboards and Prometheus rules.")
# The install tree is laid out for /usr, with /etc beside it (packaging/install-prefixed.cmake
# picks /etc for that prefix): DESTDIR staging keeps those absolute paths inside the package.
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_INSTALL_PREFIX /usr)  # what CPACK_SET_DESTDIR installs with
set(CPACK_SET_DESTDIR ON)
set(CPACK_STRIP_FILES ON)  # as Debian packages ship binaries (debug info belongs in a -dbgsym)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
# The binary's DT_NEEDED libraries, by the Debian 12 packages that ship them (dpkg -S);
# tests/scripts/test_package.sh checks that this list covers them.
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "libc6 (>= 2.36), libstdc++6, libgcc-s1, libprometheus-cpp-core1.0, libcivetweb1 (>= 1.15), libspdlog1.10, libfmt9, libyaml-cpp0.7, zlib1g, libcurl4, libsystemd0, libmnl0, libcrypt1, libssl3, libre2-9")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS systemd)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    "${CMAKE_SOURCE_DIR}/packaging/debian/conffiles;${CMAKE_SOURCE_DIR}/packaging/debian/postinst;${CMAKE_SOURCE_DIR}/packaging/debian/prerm;${CMAKE_SOURCE_DIR}/packaging/debian/postrm")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
