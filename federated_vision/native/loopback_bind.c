/* LD_PRELOAD shim: a wildcard bind() to a non-zero port becomes loopback.
 *
 * TFF 0.87's worker_binary listens on "[::]:port" (all interfaces) and has no
 * flag to change that; its executor service has no authentication and runs
 * any TensorFlow graph it is sent. Preloaded into the worker by
 * federated_vision.execution, this rewrites
 *   AF_INET  0.0.0.0:port -> 127.0.0.1:port
 *   AF_INET6 [::]:port    -> [::ffff:127.0.0.1]:port (the dual-stack socket
 *                            then accepts 127.0.0.1 only)
 * Binds to port 0 (ephemeral, outgoing) and to specific addresses pass
 * through unchanged.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*bind_fn)(int, const struct sockaddr *, socklen_t);

int bind(int fd, const struct sockaddr *addr, socklen_t len) {
  static bind_fn real_bind = NULL;
  if (real_bind == NULL) {
    real_bind = (bind_fn)dlsym(RTLD_NEXT, "bind");
    if (real_bind == NULL) {
      errno = ENOSYS;
      return -1;
    }
  }
  if (addr != NULL && addr->sa_family == AF_INET &&
      len >= (socklen_t)sizeof(struct sockaddr_in)) {
    struct sockaddr_in in4;
    memcpy(&in4, addr, sizeof in4);
    if (in4.sin_port != 0 && in4.sin_addr.s_addr == htonl(INADDR_ANY)) {
      in4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      return real_bind(fd, (const struct sockaddr *)&in4, sizeof in4);
    }
  } else if (addr != NULL && addr->sa_family == AF_INET6 &&
             len >= (socklen_t)sizeof(struct sockaddr_in6)) {
    struct sockaddr_in6 in6;
    memcpy(&in6, addr, sizeof in6);
    if (in6.sin6_port != 0 && IN6_IS_ADDR_UNSPECIFIED(&in6.sin6_addr)) {
      static const unsigned char kMappedLoopback[16] = {
          0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
      memcpy(&in6.sin6_addr, kMappedLoopback, sizeof kMappedLoopback);
      return real_bind(fd, (const struct sockaddr *)&in6, sizeof in6);
    }
  }
  return real_bind(fd, addr, len);
}
