# Install layout (FHS) and the .deb: `cmake --install BUILD [--prefix /usr]`, `cpack`.
# Included by the top-level CMakeLists.txt. With PREFIX=/usr (the .deb):
#   /usr/bin/loadwatch
#   /usr/lib/systemd/system/loadwatch.service
#   /usr/lib/sysusers.d/loadwatch.conf             the loadwatch system user
#   /etc/loadwatch/loadwatch.yml, /etc/default/loadwatch     (conffiles)
#   /usr/share/loadwatch/dashboards/*.json, /usr/share/loadwatch/rules/{,short-soak/}*.yml   (the mixin)
#   /usr/share/doc/loadwatch/{README.md,service.md,soak.md,runs.md}, .../examples/{loadwatch.yml,web-config.example.yml}
#   /usr/share/doc/loadwatch/{copyright,changelog.gz}, /usr/share/man/man1/loadwatch.1.gz
# With any other prefix, /etc becomes PREFIX/etc and the unit's paths follow.

install(FILES systemd/loadwatch.sysusers DESTINATION lib/sysusers.d RENAME loadwatch.conf)
install(DIRECTORY dashboards/grafana/ DESTINATION ${CMAKE_INSTALL_DATADIR}/loadwatch/dashboards
        FILES_MATCHING PATTERN "*.json")
install(DIRECTORY dashboards/rules/ DESTINATION ${CMAKE_INSTALL_DATADIR}/loadwatch/rules
        FILES_MATCHING PATTERN "*.yml")
install(FILES README.md docs/service.md docs/soak.md docs/runs.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES config/loadwatch.yml config/web-config.example.yml
        DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples)

set(LOADWATCH_MAINTAINER "loadwatch developers <loadwatch-dev@lists.loadwatch.dev>")

# loadwatch(1), made from the built binary's --help by help2man, and the Debian changelog made
# from CHANGELOG.md: both at build time, so neither drifts from what it describes.
set(man_page ${CMAKE_BINARY_DIR}/packaging/loadwatch.1.gz)
set(changelog ${CMAKE_BINARY_DIR}/packaging/changelog.gz)
add_custom_command(OUTPUT ${changelog}
  COMMAND sh ${CMAKE_SOURCE_DIR}/packaging/debian/changelog.sh ${CMAKE_SOURCE_DIR}/CHANGELOG.md
          ${PROJECT_VERSION} ${LOADWATCH_MAINTAINER} ${changelog}
  DEPENDS CHANGELOG.md packaging/debian/changelog.sh VERBATIM)
find_program(HELP2MAN help2man)
if(HELP2MAN)
  add_custom_command(OUTPUT ${man_page}
    COMMAND sh ${CMAKE_SOURCE_DIR}/packaging/man/build.sh ${HELP2MAN} $<TARGET_FILE:loadwatch>
            ${CMAKE_SOURCE_DIR}/packaging/man/loadwatch.h2m ${PROJECT_VERSION} ${man_page}
    DEPENDS loadwatch packaging/man/build.sh packaging/man/loadwatch.h2m VERBATIM)
  add_custom_target(loadwatch_docs ALL DEPENDS ${man_page} ${changelog})
  install(FILES ${man_page} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
else()
  # Building and testing work without it; installing and packaging do not.
  message(WARNING "help2man not found: installing and packaging need it for loadwatch(1) "
                  "(scripts/install-deps build)")
  add_custom_target(loadwatch_docs ALL DEPENDS ${changelog})
  install(CODE "message(FATAL_ERROR \"help2man not found: loadwatch(1) was not built\")")
endif()
install(FILES ${changelog} packaging/debian/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR})

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
set(CPACK_PACKAGE_CONTACT "${LOADWATCH_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Prometheus exporter for hosts under load, stress and soak tests")
# Lines within 80 columns (CPack indents each by one space).
set(CPACK_PACKAGE_DESCRIPTION
    "loadwatch runs on each host of a load, stress or soak test. It samples the
processes of the system under test, the mock and the load generator (memory,
CPU, fds against their limit, threads, restarts) and the host's pressure (CPU
modes, softirqs, TCP states, TIME_WAIT and ephemeral ports, accept queues,
tunables), scrapes the mock's and the generator's own statistics, and serves
it all on one /metrics endpoint for Prometheus. Grafana dashboards and
Prometheus rules for these metrics are included.")
# The install tree is laid out for /usr, with /etc beside it (packaging/install-prefixed.cmake
# picks /etc for that prefix): DESTDIR staging keeps those absolute paths inside the package.
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_INSTALL_PREFIX /usr)  # what CPACK_SET_DESTDIR installs with
set(CPACK_SET_DESTDIR ON)
set(CPACK_STRIP_FILES ON)  # as Debian packages ship binaries (debug info belongs in a -dbgsym)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION admin)
# The binary's DT_NEEDED libraries, by the Debian 12 packages that ship them (dpkg -S);
# tests/scripts/test_package.sh checks that this list covers them. Then systemd-sysusers for
# postinst, as debhelper's dh_installsysusers depends on it (deb-systemd-helper and
# deb-systemd-invoke come from init-system-helpers, which is Essential).
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "libc6 (>= 2.36), libstdc++6, libgcc-s1, libprometheus-cpp-core1.0, libspdlog1.10, libfmt9, libyaml-cpp0.7, zlib1g, libcurl4, libsystemd0, libmnl0, libcrypt1, libssl3, libre2-9, systemd | systemd-standalone-sysusers | systemd-sysusers")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    "${CMAKE_SOURCE_DIR}/packaging/debian/conffiles;${CMAKE_SOURCE_DIR}/packaging/debian/postinst;${CMAKE_SOURCE_DIR}/packaging/debian/prerm;${CMAKE_SOURCE_DIR}/packaging/debian/postrm")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
