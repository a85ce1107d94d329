/* The pod sandbox's process for the local node (containerd's sandbox_image): it holds
 * the pod's namespaces, reaps children and exits on SIGTERM or SIGINT. No registry is
 * reachable here to pull the usual pause image, so this one is built with gcc -static. */
#include <signal.h>
#include <stddef.h>
#include <sys/wait.h>
#include <unistd.h>

static void stop(int sig) {
    (void)sig;
    _exit(0);
}

static void reap(int sig) {
    (void)sig;
    while (waitpid(-1, NULL, WNOHANG) > 0) {
    }
}

int main(void) {
    signal(SIGTERM, stop);
    signal(SIGINT, stop);
    signal(SIGCHLD, reap);
    for (;;) {
        pause();
    }
}
