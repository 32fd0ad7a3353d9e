#include "daemon.h"

int main(int argc, char** argv) { return loadwatch::run_daemon(argc, argv); }
