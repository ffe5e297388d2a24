/* sem_clockwait and pthread_cond_clockwait for a process under libfaketime 0.9.10, which does not
   intercept them (libfaketime issue 390): the caller computed its deadline on the faked clock,
   so it is turned into the same wait on the real clock before the real call. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <semaphore.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static struct timespec on_the_real_clock(clockid_t clock, const struct timespec *deadline)
{
    struct timespec faked, real, out;
    clock_gettime(clock, &faked);                  /* libfaketime's answer */
    syscall(SYS_clock_gettime, clock, &real);      /* the kernel's */
    long long left = (deadline->tv_sec - faked.tv_sec) * 1000000000LL
                     + (deadline->tv_nsec - faked.tv_nsec);
    if (left < 0)
        left = 0;
    long long at = real.tv_sec * 1000000000LL + real.tv_nsec + left;
    out.tv_sec = at / 1000000000LL;
    out.tv_nsec = at % 1000000000LL;
    return out;
}

int sem_clockwait(sem_t *sem, clockid_t clock, const struct timespec *deadline)
{
    static int (*real_call)(sem_t *, clockid_t, const struct timespec *);
    if (!real_call)
        real_call = dlsym(RTLD_NEXT, "sem_clockwait");
    struct timespec real = on_the_real_clock(clock, deadline);
    return real_call(sem, clock, &real);
}

int pthread_cond_clockwait(pthread_cond_t *cond, pthread_mutex_t *mutex, clockid_t clock,
                           const struct timespec *deadline)
{
    static int (*real_call)(pthread_cond_t *, pthread_mutex_t *, clockid_t, const struct timespec *);
    if (!real_call)
        real_call = dlsym(RTLD_NEXT, "pthread_cond_clockwait");
    struct timespec real = on_the_real_clock(clock, deadline);
    return real_call(cond, mutex, clock, &real);
}
