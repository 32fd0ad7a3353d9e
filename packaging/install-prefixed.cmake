# Runs at install time (cmake --install, cpack): installs the files whose paths depend on the
# install prefix. /etc for PREFIX=/usr (a distribution layout, as in the .deb), PREFIX/etc
# otherwise (FHS: /usr/local/etc); the unit's /usr/bin, /etc and /usr/share/doc paths follow.
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(etc "/etc")
else()
  set(etc "${CMAKE_INSTALL_PREFIX}/etc")
endif()
set(src "${LOADWATCH_SOURCE_DIR}")

file(READ "${src}/systemd/loadwatch.service" unit)
string(REPLACE "/usr/bin/loadwatch" "${CMAKE_INSTALL_PREFIX}/${LOADWATCH_BINDIR}/loadwatch" unit "${unit}")
string(REPLACE "/usr/share/doc/loadwatch" "${CMAKE_INSTALL_PREFIX}/${LOADWATCH_DOCDIR}" unit "${unit}")
string(REPLACE "/etc/" "${etc}/" unit "${unit}")
# One staging file per destination: installs to several roots may run at once (ctest -j).
string(MD5 where "$ENV{DESTDIR}|${CMAKE_INSTALL_PREFIX}")
set(staged "${LOADWATCH_BINARY_DIR}/packaging/${where}/loadwatch.service")
file(WRITE "${staged}" "${unit}")

file(INSTALL DESTINATION "${CMAKE_INSTALL_PREFIX}/lib/systemd/system" TYPE FILE
     PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ FILES "${staged}")
file(INSTALL DESTINATION "${etc}/loadwatch" TYPE FILE
     PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ FILES "${src}/config/loadwatch.yml")
file(INSTALL DESTINATION "${etc}/default" TYPE FILE RENAME loadwatch
     PERMISSIONS OWNER_READ OWNER_WRITE GROUP_READ WORLD_READ FILES "${src}/systemd/loadwatch.default")
