/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Userspace stand-ins for the kernel interfaces that the ktap VM core
 * (kernel/trace/ktap/vm_*.c) uses, so that the loader, the verifier and
 * the interpreter can be built as ordinary programs under libFuzzer,
 * ASan and UBSan. Every <linux/...> header of include/linux/ in this
 * directory includes this file; nothing here is taken from the kernel.
 *
 * The model is one process, one thread, KTAP_FUZZ_NR_CPUS fake CPUs of
 * which the harness picks the current one (ktap_shim.cpu), and a fake
 * current task. Locks, interrupt and preemption state are tracked, not
 * just ignored: taking a lock that is held (a self-deadlock on a real
 * kernel), unlocking a free one, sleeping or allocating with GFP_KERNEL
 * in atomic context, WARN and BUG all abort, and the harness checks
 * that every VM entry point returns with everything balanced.
 */
#ifndef _KTAP_SHIM_H
#define _KTAP_SHIM_H

#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef KTAP_FUZZ_NR_CPUS
#define KTAP_FUZZ_NR_CPUS	2
#endif

/* Kconfig: what the fuzz build is configured as. */
#define CONFIG_64BIT		1
#define CONFIG_SMP		1
#define CONFIG_KTAP		1
#define CONFIG_KTAP_DEBUG_VM	1
#define CONFIG_NR_CPUS		KTAP_FUZZ_NR_CPUS

#define __KSHIM_PLACEHOLDER_1			0,
#define __kshim_second(ignored, val, ...)	val
#define __kshim_defined3(junk)			__kshim_second(junk 1, 0, 0)
#define __kshim_defined2(val)	__kshim_defined3(__KSHIM_PLACEHOLDER_##val)
#define __kshim_defined(x)			__kshim_defined2(x)
#define IS_ENABLED(option)			__kshim_defined(option)
#define IS_BUILTIN(option)			__kshim_defined(option)
#define IS_REACHABLE(option)			__kshim_defined(option)
#define IS_MODULE(option)			0

/* Types. */
typedef unsigned char		u8;
typedef signed char		s8;
typedef unsigned short		u16;
typedef signed short		s16;
typedef unsigned int		u32;
typedef signed int		s32;
typedef unsigned long long	u64;
typedef signed long long	s64;
typedef u8			__u8;
typedef s8			__s8;
typedef u16			__u16;
typedef s16			__s16;
typedef u32			__u32;
typedef s32			__s32;
typedef u64			__u64;
typedef s64			__s64;
typedef u64 __attribute__((aligned(8)))	__aligned_u64;
typedef u16			__le16;
typedef u32			__le32;
typedef u64			__le64;
typedef unsigned int		gfp_t;
typedef s64			ktime_t;
typedef u64			phys_addr_t;
typedef unsigned long		uintptr_kt;

struct pt_regs;

#define U8_MAX		((u8)~0U)
#define S8_MAX		((s8)(U8_MAX >> 1))
#define S8_MIN		((s8)(-S8_MAX - 1))
#define U16_MAX		((u16)~0U)
#define S16_MAX		((s16)(U16_MAX >> 1))
#define S16_MIN		((s16)(-S16_MAX - 1))
#define U32_MAX		((u32)~0U)
#define S32_MAX		((s32)(U32_MAX >> 1))
#define S32_MIN		((s32)(-S32_MAX - 1))
#define U64_MAX		((u64)~0ULL)
#define S64_MAX		((s64)(U64_MAX >> 1))
#define S64_MIN		((s64)(-S64_MAX - 1))

/* Compiler attributes and helpers. */
#define likely(x)		__builtin_expect(!!(x), 1)
#define unlikely(x)		__builtin_expect(!!(x), 0)
#define __printf(a, b)		__attribute__((__format__(printf, a, b)))
#define __scanf(a, b)		__attribute__((__format__(scanf, a, b)))
#define __aligned(x)		__attribute__((__aligned__(x)))
#define __packed		__attribute__((__packed__))
#define noinline		__attribute__((__noinline__))
#define __maybe_unused		__attribute__((__unused__))
#define __always_unused		__attribute__((__unused__))
#define __used			__attribute__((__used__))
#define __must_check		__attribute__((__warn_unused_result__))
#define __cold			__attribute__((__cold__))
#define __noreturn		__attribute__((__noreturn__))
#define __pure			__attribute__((__pure__))
#define __weak			__attribute__((__weak__))
#define fallthrough		__attribute__((__fallthrough__))
#define __user
#define __kernel
#define __iomem
#define __force
#define __rcu
#define __percpu
#define __bitwise
#define __read_mostly
#define __ro_after_init
#define __init
#define __exit
#define __initdata
#define notrace
#define __nocfi
#define __no_kcsan
#define __annotate_jump_table
#define __counted_by(member)
#define __nonstring
#define __randomize_layout

#define __KSHIM_PASTE2(a, b)	a##b
#define __KSHIM_PASTE(a, b)	__KSHIM_PASTE2(a, b)
#define __UNIQUE_ID(prefix)						\
	__KSHIM_PASTE(__KSHIM_PASTE(__uid_, prefix), __COUNTER__)

#define barrier()		__atomic_signal_fence(__ATOMIC_SEQ_CST)
#define READ_ONCE(x)		(*(const volatile __typeof__(x) *)&(x))
#define WRITE_ONCE(x, val)						\
	do {								\
		*(volatile __typeof__(x) *)&(x) = (val);		\
	} while (0)
#define data_race(expr)		(expr)

#define ARRAY_SIZE(a)		(sizeof(a) / sizeof((a)[0]))
#define BIT(n)			(1UL << (n))
#define BIT_ULL(n)		(1ULL << (n))
#define GENMASK(h, l)		((~0UL << (l)) & (~0UL >> (63 - (h))))
#define ALIGN(x, a)							\
	(((x) + ((__typeof__(x))(a) - 1)) & ~((__typeof__(x))(a) - 1))
#define ALIGN_DOWN(x, a)	((x) & ~((__typeof__(x))(a) - 1))
#define IS_ALIGNED(x, a)	(((x) & ((__typeof__(x))(a) - 1)) == 0)
#define PTR_ALIGN(p, a)		((__typeof__(p))ALIGN((unsigned long)(p), (a)))
#define DIV_ROUND_UP(n, d)	(((n) + (d) - 1) / (d))
#define round_up(x, y)		((((x) - 1) | ((__typeof__(x))((y) - 1))) + 1)
#define round_down(x, y)	((x) & ~((__typeof__(x))((y) - 1)))
#define roundup(x, y)		((((x) + ((y) - 1)) / (y)) * (y))
#define container_of(ptr, type, member)					\
	((type *)((char *)(ptr) - offsetof(type, member)))
#define sizeof_field(type, member)	sizeof(((type *)0)->member)
#define typeof_member(type, member)	__typeof__(((type *)0)->member)

#define BUILD_BUG_ON(cond)						\
	do {								\
		_Static_assert(!(cond), "BUILD_BUG_ON: " #cond);	\
	} while (0)
#define BUILD_BUG_ON_MSG(cond, msg)	BUILD_BUG_ON(cond)
#define BUILD_BUG_ON_ZERO(e)		((int)(sizeof(struct { int:(-!!(e)); })))
#ifndef static_assert
#define __kshim_static_assert(expr, msg, ...)	_Static_assert(expr, msg)
#define static_assert(expr, ...)					\
	__kshim_static_assert(expr, ##__VA_ARGS__, #expr)
#endif

/* WARN and BUG: a splat in the kernel, an abort here. */
void ktap_shim_warn(const char *file, int line, const char *what,
		    const char *fmt, ...) __printf(4, 5) __noreturn;

#define __KSHIM_WARN(cond, fmt...)					\
	({								\
		bool __w = !!(cond);					\
		if (unlikely(__w))					\
			ktap_shim_warn(__FILE__, __LINE__, #cond, fmt);	\
		unlikely(__w);						\
	})
#define WARN_ON(cond)		__KSHIM_WARN(cond, "%s", "")
#define WARN_ON_ONCE(cond)	__KSHIM_WARN(cond, "%s", "")
#define WARN(cond, fmt...)	__KSHIM_WARN(cond, fmt)
#define WARN_ONCE(cond, fmt...)	__KSHIM_WARN(cond, fmt)
#define BUG()			ktap_shim_warn(__FILE__, __LINE__, "BUG()", "%s", "")
#define BUG_ON(cond)							\
	do {								\
		if (unlikely(cond))					\
			ktap_shim_warn(__FILE__, __LINE__, "BUG_ON(" #cond ")", \
				       "%s", "");			\
	} while (0)
#define VM_BUG_ON(cond)		BUG_ON(cond)
#define VM_WARN_ON(cond)	WARN_ON(cond)
#define VM_WARN_ON_ONCE(cond)	WARN_ON_ONCE(cond)

/* printk: silent, but the formats are still checked. */
static inline __printf(1, 2) int ktap_shim_printk(const char *fmt, ...)
{
	(void)fmt;
	return 0;
}

#define KERN_EMERG	""
#define KERN_ALERT	""
#define KERN_CRIT	""
#define KERN_ERR	""
#define KERN_WARNING	""
#define KERN_NOTICE	""
#define KERN_INFO	""
#define KERN_DEBUG	""
#define KERN_CONT	""
#ifndef pr_fmt
#define pr_fmt(fmt)	fmt
#endif
#define printk(fmt, ...)	ktap_shim_printk(fmt, ##__VA_ARGS__)
#define no_printk(fmt, ...)	ktap_shim_printk(fmt, ##__VA_ARGS__)
#define pr_emerg(fmt, ...)	ktap_shim_printk(pr_fmt(fmt), ##__VA_ARGS__)
#define pr_alert(fmt, ...)	ktap_shim_printk(pr_fmt(fmt), ##__VA_ARGS__)
#define pr_crit(fmt, ...)	ktap_shim_printk(pr_fmt(fmt), ##__VA_ARGS__)
#define pr_err(fmt, ...)	ktap_shim_printk(pr_fmt(fmt), ##__VA_ARGS__)
#define pr_warn(fmt, ...)	ktap_shim_printk(pr_fmt(fmt), ##__VA_ARGS__)
#define pr_notice(fmt, ...)	ktap_shim_printk(pr_fmt(fmt), ##__VA_ARGS__)
#define pr_info(fmt, ...)	ktap_shim_printk(pr_fmt(fmt), ##__VA_ARGS__)
#define pr_debug(fmt, ...)	ktap_shim_printk(pr_fmt(fmt), ##__VA_ARGS__)
#define pr_cont(fmt, ...)	ktap_shim_printk(fmt, ##__VA_ARGS__)
#define pr_err_once		pr_err
#define pr_warn_once		pr_warn
#define pr_info_once		pr_info
#define pr_warn_ratelimited	pr_warn
#define pr_err_ratelimited	pr_err

/* Modules and exports. */
#define EXPORT_SYMBOL(sym)
#define EXPORT_SYMBOL_GPL(sym)
#define EXPORT_SYMBOL_NS_GPL(sym, ns)
#define MODULE_LICENSE(x)
#define MODULE_DESCRIPTION(x)
#define MODULE_AUTHOR(x)
#define THIS_MODULE		((void *)0)

/* errno values, as the kernel numbers them. */
#define EPERM		1
#define ENOENT		2
#define ESRCH		3
#define EINTR		4
#define EIO		5
#define ENXIO		6
#define E2BIG		7
#define EBADF		9
#define EAGAIN		11
#define ENOMEM		12
#define EACCES		13
#define EFAULT		14
#define ENOTBLK		15
#define EBUSY		16
#define EEXIST		17
#define EXDEV		18
#define ENODEV		19
#define ENOTDIR		20
#define EISDIR		21
#define EINVAL		22
#define ENFILE		23
#define EMFILE		24
#define ENOTTY		25
#define ETXTBSY		26
#define EFBIG		27
#define ENOSPC		28
#define ESPIPE		29
#define EROFS		30
#define EMLINK		31
#define EPIPE		32
#define EDOM		33
#define ERANGE		34
#define EDEADLK		35
#define ENAMETOOLONG	36
#define ENOLCK		37
#define ENOSYS		38
#define ENOTEMPTY	39
#define ELOOP		40
#define ENOMSG		42
#define ENODATA		61
#define ETIME		62
#define EPROTO		71
#define EBADMSG		74
#define EOVERFLOW	75
#define EILSEQ		84
#define EUSERS		87
#define EMSGSIZE	90
#define EOPNOTSUPP	95
#define ESHUTDOWN	108
#define ETIMEDOUT	110
#define EALREADY	114
#define ECANCELED	125
#define ERESTARTSYS	512
#define ENOTSUPP	524
#define MAX_ERRNO	4095

#define IS_ERR_VALUE(x)							\
	unlikely((unsigned long)(void *)(x) >= (unsigned long)-MAX_ERRNO)

static inline void *ERR_PTR(long error)
{
	return (void *)error;
}

static inline long PTR_ERR(const void *ptr)
{
	return (long)ptr;
}

static inline bool IS_ERR(const void *ptr)
{
	return IS_ERR_VALUE((unsigned long)ptr);
}

static inline bool IS_ERR_OR_NULL(const void *ptr)
{
	return !ptr || IS_ERR(ptr);
}

static inline void *ERR_CAST(const void *ptr)
{
	return (void *)ptr;
}

static inline int PTR_ERR_OR_ZERO(const void *ptr)
{
	return IS_ERR(ptr) ? (int)PTR_ERR(ptr) : 0;
}

/* min, max, clamp: each argument evaluated once. */
#define min(a, b)							\
	({ __typeof__(a) __a = (a); __typeof__(b) __b = (b);		\
	   __a < __b ? __a : __b; })
#define max(a, b)							\
	({ __typeof__(a) __a = (a); __typeof__(b) __b = (b);		\
	   __a > __b ? __a : __b; })
#define min3(a, b, c)		min(min(a, b), c)
#define max3(a, b, c)		max(max(a, b), c)
#define min_t(type, a, b)						\
	({ type __a = (a); type __b = (b); __a < __b ? __a : __b; })
#define max_t(type, a, b)						\
	({ type __a = (a); type __b = (b); __a > __b ? __a : __b; })
#define umin(a, b)		min_t(unsigned long long, a, b)
#define umax(a, b)		max_t(unsigned long long, a, b)
#define clamp_t(type, val, lo, hi)					\
	({ type __v = (val); type __l = (lo); type __h = (hi);		\
	   __v < __l ? __l : (__v > __h ? __h : __v); })
#define clamp(val, lo, hi)	clamp_t(__typeof__(val), val, lo, hi)
#define clamp_val(val, lo, hi)	clamp_t(__typeof__(val), val, lo, hi)
#define min_not_zero(a, b)						\
	({ __typeof__(a) __a = (a); __typeof__(b) __b = (b);		\
	   __a == 0 ? __b : (__b == 0 ? __a : min(__a, __b)); })
#define swap(a, b)							\
	do { __typeof__(a) __t = (a); (a) = (b); (b) = __t; } while (0)

/* Overflow-checked sizes: saturate at SIZE_MAX as the kernel does. */
#define check_add_overflow(a, b, d)	__builtin_add_overflow(a, b, d)
#define check_sub_overflow(a, b, d)	__builtin_sub_overflow(a, b, d)
#define check_mul_overflow(a, b, d)	__builtin_mul_overflow(a, b, d)

static inline size_t size_mul(size_t a, size_t b)
{
	size_t r;

	return __builtin_mul_overflow(a, b, &r) ? SIZE_MAX : r;
}

static inline size_t size_add(size_t a, size_t b)
{
	size_t r;

	return __builtin_add_overflow(a, b, &r) ? SIZE_MAX : r;
}

static inline size_t size_sub(size_t a, size_t b)
{
	return a == SIZE_MAX || b == SIZE_MAX || a < b ? SIZE_MAX : a - b;
}

#define array_size(a, b)		size_mul(a, b)
#define array3_size(a, b, c)		size_mul(size_mul(a, b), c)
#define flex_array_size(p, member, n)	size_mul(sizeof(*(p)->member), n)
#define struct_size(p, member, n)					\
	size_add(sizeof(*(p)), flex_array_size(p, member, n))
#define struct_size_t(type, member, n)					\
	struct_size((type *)NULL, member, n)

/* Bit searching and powers of two. */
static inline int fls(unsigned int x)
{
	return x ? 32 - __builtin_clz(x) : 0;
}

static inline int fls64(u64 x)
{
	return x ? 64 - __builtin_clzll(x) : 0;
}

static inline int fls_long(unsigned long x)
{
	return fls64(x);
}

static inline unsigned long __fls(unsigned long x)
{
	return 63 - __builtin_clzl(x);
}

static inline unsigned long __ffs(unsigned long x)
{
	return __builtin_ctzl(x);
}

#define hweight32(x)		__builtin_popcount(x)
#define hweight64(x)		__builtin_popcountll(x)
#define hweight_long(x)		__builtin_popcountl(x)

/* floor(log2(n)); -1 for 0 (the kernel leaves that undefined). */
#define ilog2(n)		((int)fls64((u64)(n)) - 1)
#define is_power_of_2(n)	((n) != 0 && (((n) & ((n) - 1)) == 0))
/* As the kernel's: undefined (here: a UBSan shift report) for 0. */
#define roundup_pow_of_two(n)	(1UL << fls_long((unsigned long)(n) - 1))
#define rounddown_pow_of_two(n)	(1UL << (fls_long(n) - 1))
#define order_base_2(n)		((n) > 1 ? ilog2((n) - 1) + 1 : 0)

/* Hashing. */
#define GOLDEN_RATIO_32		0x61C88647U
#define GOLDEN_RATIO_64		0x61C8864680B583EBULL

static inline u32 hash_64(u64 val, unsigned int bits)
{
	return (u32)((val * GOLDEN_RATIO_64) >> (64 - bits));
}

static inline u32 hash_32(u32 val, unsigned int bits)
{
	return (val * GOLDEN_RATIO_32) >> (32 - bits);
}

#define hash_long(val, bits)	hash_64(val, bits)
#define hash_ptr(p, bits)	hash_64((unsigned long)(p), bits)

u32 jhash(const void *key, u32 length, u32 initval);
u32 jhash2(const u32 *k, u32 length, u32 initval);

static inline u32 jhash_1word(u32 a, u32 initval)
{
	return jhash(&a, sizeof(a), initval);
}

/* 64-bit division. */
static inline u64 div64_u64(u64 a, u64 b)
{
	return a / b;
}

static inline s64 div64_s64(s64 a, s64 b)
{
	return a / b;
}

static inline u64 div_u64(u64 a, u32 b)
{
	return a / b;
}

static inline s64 div_s64(s64 a, s32 b)
{
	return a / b;
}

static inline u64 div_u64_rem(u64 a, u32 b, u32 *rem)
{
	*rem = a % b;
	return a / b;
}

static inline u64 div64_u64_rem(u64 a, u64 b, u64 *rem)
{
	*rem = a % b;
	return a / b;
}

static inline s64 div_s64_rem(s64 a, s32 b, s32 *rem)
{
	*rem = a % b;
	return a / b;
}

#define do_div(n, base)							\
	({ u32 __b = (base); u32 __r = (u32)((n) % __b);		\
	   (n) /= __b; __r; })

/* Strings and formatting (shim.c). */
#undef isdigit
#undef isxdigit
#undef isspace
#undef isalpha
#undef isalnum
#undef isupper
#undef islower
#undef isprint
#undef tolower
#undef toupper
#define isdigit(c)	((unsigned char)(c) >= '0' && (unsigned char)(c) <= '9')
#define islower(c)	((unsigned char)(c) >= 'a' && (unsigned char)(c) <= 'z')
#define isupper(c)	((unsigned char)(c) >= 'A' && (unsigned char)(c) <= 'Z')
#define isalpha(c)	(islower(c) || isupper(c))
#define isalnum(c)	(isalpha(c) || isdigit(c))
#define isxdigit(c)	(isdigit(c) ||					\
			 (unsigned int)(((unsigned char)(c) | 0x20) - 'a') < 6U)
#define isspace(c)	((c) == ' ' || ((unsigned char)(c) >= '\t' && \
			 (unsigned char)(c) <= '\r'))
#define isprint(c)	((unsigned char)(c) >= 0x20 && (unsigned char)(c) < 0x7f)
#define _tolower(c)	((unsigned char)(c) | 0x20)
#define tolower(c)	(isupper(c) ? (unsigned char)(c) + 0x20 : (unsigned char)(c))
#define toupper(c)	(islower(c) ? (unsigned char)(c) - 0x20 : (unsigned char)(c))

void *memchr_inv(const void *start, int c, size_t bytes);
long ktap_shim_strscpy(char *dst, const char *src, size_t size);
long ktap_shim_strscpy_pad(char *dst, const char *src, size_t size);
#define __KSHIM_PICK3(a, b, c, f, ...)	f
#define strscpy(...)							\
	__KSHIM_PICK3(__VA_ARGS__, __kshim_strscpy3, __kshim_strscpy2)(__VA_ARGS__)
#define __kshim_strscpy3(d, s, n)	ktap_shim_strscpy(d, s, n)
#define __kshim_strscpy2(d, s)		ktap_shim_strscpy(d, s, sizeof(d))
#define strscpy_pad(...)						\
	__KSHIM_PICK3(__VA_ARGS__, __kshim_strscpy_pad3,		\
		      __kshim_strscpy_pad2)(__VA_ARGS__)
#define __kshim_strscpy_pad3(d, s, n)	ktap_shim_strscpy_pad(d, s, n)
#define __kshim_strscpy_pad2(d, s)	ktap_shim_strscpy_pad(d, s, sizeof(d))

int vscnprintf(char *buf, size_t size, const char *fmt, va_list args)
	__printf(3, 0);
int scnprintf(char *buf, size_t size, const char *fmt, ...) __printf(3, 4);
char *kasprintf(gfp_t gfp, const char *fmt, ...) __printf(2, 3);

int kstrtoull(const char *s, unsigned int base, unsigned long long *res);
int kstrtoll(const char *s, unsigned int base, long long *res);
int kstrtoul(const char *s, unsigned int base, unsigned long *res);
int kstrtol(const char *s, unsigned int base, long *res);
int kstrtouint(const char *s, unsigned int base, unsigned int *res);
int kstrtoint(const char *s, unsigned int base, int *res);
#define kstrtou64(s, base, res)	kstrtoull(s, base, (unsigned long long *)(res))
#define kstrtos64(s, base, res)	kstrtoll(s, base, (long long *)(res))
#define kstrtou32(s, base, res)	kstrtouint(s, base, (unsigned int *)(res))
#define kstrtos32(s, base, res)	kstrtoint(s, base, (int *)(res))

/*
 * State of the fake machine, set by the harness and checked after
 * every call into the VM.
 */
struct ktap_shim_state {
	unsigned int	cpu;		/* smp_processor_id() */
	unsigned int	context;	/* KTAP_SHIM_* of the code running */
	int		preempt;	/* preempt_disable() depth */
	int		irqs_off;	/* local_irq_save() depth */
	int		locks;		/* spinlocks held */
	u64		allocs;		/* kernel allocations made */
	u64		fail_alloc_at;	/* make allocation N fail; 0: never */
	u64		signal_checks;	/* signal_pending() calls so far */
	u64		signal_after;	/* pending from check N on; 0: never */
	u64		clock;		/* fake ns clock */
	u64		random;		/* get_random_u32() state */
};

#define KTAP_SHIM_HARDIRQ	0x1
#define KTAP_SHIM_SOFTIRQ	0x2
#define KTAP_SHIM_NMI		0x4

extern struct ktap_shim_state ktap_shim;
void ktap_shim_reset(void);
void ktap_shim_fail(const char *what, const void *obj) __noreturn;

/* CPUs. */
#define NR_CPUS			KTAP_FUZZ_NR_CPUS
#define nr_cpu_ids		((unsigned int)KTAP_FUZZ_NR_CPUS)
#define num_possible_cpus()	nr_cpu_ids
#define num_online_cpus()	nr_cpu_ids
#define num_present_cpus()	nr_cpu_ids
#define cpu_possible(cpu)	((unsigned int)(cpu) < nr_cpu_ids)
#define cpu_online(cpu)		cpu_possible(cpu)
#define for_each_possible_cpu(cpu)					\
	for ((cpu) = 0; (cpu) < (int)nr_cpu_ids; (cpu)++)
#define for_each_online_cpu(cpu)	for_each_possible_cpu(cpu)
#define for_each_present_cpu(cpu)	for_each_possible_cpu(cpu)
#define smp_processor_id()	((int)ktap_shim.cpu)
#define raw_smp_processor_id()	((int)ktap_shim.cpu)

/* Context, preemption, interrupts. */
#define in_nmi()		(!!(ktap_shim.context & KTAP_SHIM_NMI))
#define in_hardirq()		(!!(ktap_shim.context & KTAP_SHIM_HARDIRQ))
#define in_irq()		in_hardirq()
#define in_softirq()		(!!(ktap_shim.context & KTAP_SHIM_SOFTIRQ))
#define in_serving_softirq()	in_softirq()
#define in_interrupt()		(ktap_shim.context != 0)
#define in_task()		(ktap_shim.context == 0)
#define irq_count()		ktap_shim.context
#define in_atomic()							\
	(ktap_shim.preempt > 0 || ktap_shim.irqs_off > 0 || !in_task())
#define preempt_count()		ktap_shim.preempt
#define preemptible()		(!in_atomic())

#define preempt_disable()	do { ktap_shim.preempt++; barrier(); } while (0)
#define preempt_enable()						\
	do {								\
		barrier();						\
		if (--ktap_shim.preempt < 0)				\
			ktap_shim_fail("preempt_enable() unbalanced", NULL); \
	} while (0)
#define preempt_disable_notrace()	preempt_disable()
#define preempt_enable_notrace()	preempt_enable()
#define preempt_enable_no_resched()	preempt_enable()
#define migrate_disable()		preempt_disable()
#define migrate_enable()		preempt_enable()
#define get_cpu()		({ preempt_disable(); smp_processor_id(); })
#define put_cpu()		preempt_enable()

#define local_irq_save(flags)						\
	do { (flags) = (unsigned long)ktap_shim.irqs_off++; } while (0)
#define local_irq_restore(flags)					\
	do {								\
		if ((int)(flags) != ktap_shim.irqs_off - 1)		\
			ktap_shim_fail("local_irq_restore() out of order", NULL); \
		ktap_shim.irqs_off = (int)(flags);			\
	} while (0)
#define local_irq_disable()	do { ktap_shim.irqs_off++; } while (0)
#define local_irq_enable()						\
	do {								\
		if (--ktap_shim.irqs_off < 0)				\
			ktap_shim_fail("local_irq_enable() unbalanced", NULL); \
	} while (0)
#define irqs_disabled()		(ktap_shim.irqs_off > 0)
#define lockdep_assert_irqs_disabled()	WARN_ON(!irqs_disabled())
#define lockdep_assert_preemption_disabled()	WARN_ON(!in_atomic())

/* A sleeping call in atomic context: BUG with DEBUG_ATOMIC_SLEEP. */
#define might_sleep()							\
	do {								\
		if (in_atomic())					\
			ktap_shim_fail("sleeping function called from invalid context", \
				       NULL);				\
	} while (0)
#define might_fault()		might_sleep()
#define cant_sleep()		WARN_ON(!in_atomic())
#define might_resched()		might_sleep()

static inline int cond_resched(void)
{
	might_sleep();
	return 0;
}

#define need_resched()		0
#define cpu_relax()		barrier()

/* Atomics: __atomic builtins, sequentially consistent. */
typedef struct { int counter; } atomic_t;
typedef struct { long counter; } atomic_long_t;
typedef struct { s64 counter; } atomic64_t;

#define ATOMIC_INIT(i)		{ (i) }
#define ATOMIC64_INIT(i)	{ (i) }
#define ATOMIC_LONG_INIT(i)	{ (i) }

#define __KSHIM_SC	__ATOMIC_SEQ_CST
#define __KSHIM_ATOMIC_OPS(pfx, atype, T)				\
static inline T pfx##_read(const atype *v)				\
{ return __atomic_load_n(&v->counter, __ATOMIC_RELAXED); }		\
static inline T pfx##_read_acquire(const atype *v)			\
{ return __atomic_load_n(&v->counter, __ATOMIC_ACQUIRE); }		\
static inline void pfx##_set(atype *v, T i)				\
{ __atomic_store_n(&v->counter, i, __ATOMIC_RELAXED); }			\
static inline void pfx##_set_release(atype *v, T i)			\
{ __atomic_store_n(&v->counter, i, __ATOMIC_RELEASE); }			\
static inline void pfx##_add(T i, atype *v)				\
{ __atomic_fetch_add(&v->counter, i, __KSHIM_SC); }			\
static inline void pfx##_sub(T i, atype *v)				\
{ __atomic_fetch_sub(&v->counter, i, __KSHIM_SC); }			\
static inline void pfx##_inc(atype *v)					\
{ __atomic_fetch_add(&v->counter, 1, __KSHIM_SC); }			\
static inline void pfx##_dec(atype *v)					\
{ __atomic_fetch_sub(&v->counter, 1, __KSHIM_SC); }			\
static inline T pfx##_add_return(T i, atype *v)				\
{ return __atomic_add_fetch(&v->counter, i, __KSHIM_SC); }		\
static inline T pfx##_sub_return(T i, atype *v)				\
{ return __atomic_sub_fetch(&v->counter, i, __KSHIM_SC); }		\
static inline T pfx##_fetch_add(T i, atype *v)				\
{ return __atomic_fetch_add(&v->counter, i, __KSHIM_SC); }		\
static inline T pfx##_fetch_sub(T i, atype *v)				\
{ return __atomic_fetch_sub(&v->counter, i, __KSHIM_SC); }		\
static inline T pfx##_inc_return(atype *v)				\
{ return __atomic_add_fetch(&v->counter, 1, __KSHIM_SC); }		\
static inline T pfx##_dec_return(atype *v)				\
{ return __atomic_sub_fetch(&v->counter, 1, __KSHIM_SC); }		\
static inline bool pfx##_dec_and_test(atype *v)				\
{ return __atomic_sub_fetch(&v->counter, 1, __KSHIM_SC) == 0; }		\
static inline bool pfx##_inc_and_test(atype *v)				\
{ return __atomic_add_fetch(&v->counter, 1, __KSHIM_SC) == 0; }		\
static inline T pfx##_xchg(atype *v, T i)				\
{ return __atomic_exchange_n(&v->counter, i, __KSHIM_SC); }		\
static inline T pfx##_cmpxchg(atype *v, T old, T new)			\
{									\
	__atomic_compare_exchange_n(&v->counter, &old, new, false,	\
				    __KSHIM_SC, __KSHIM_SC);		\
	return old;							\
}									\
static inline bool pfx##_try_cmpxchg(atype *v, T *old, T new)		\
{									\
	return __atomic_compare_exchange_n(&v->counter, old, new, false, \
					   __KSHIM_SC, __KSHIM_SC);	\
}									\
static inline T pfx##_fetch_or(T i, atype *v)				\
{ return __atomic_fetch_or(&v->counter, i, __KSHIM_SC); }		\
static inline T pfx##_fetch_and(T i, atype *v)				\
{ return __atomic_fetch_and(&v->counter, i, __KSHIM_SC); }		\
static inline bool pfx##_add_unless(atype *v, T a, T u)			\
{									\
	T c = pfx##_read(v);						\
									\
	do {								\
		if (c == u)						\
			return false;					\
	} while (!pfx##_try_cmpxchg(v, &c, c + a));			\
	return true;							\
}									\
static inline bool pfx##_inc_not_zero(atype *v)				\
{ return pfx##_add_unless(v, 1, 0); }

__KSHIM_ATOMIC_OPS(atomic, atomic_t, int)
__KSHIM_ATOMIC_OPS(atomic_long, atomic_long_t, long)
__KSHIM_ATOMIC_OPS(atomic64, atomic64_t, s64)

#define cmpxchg(ptr, old, new)						\
	({ __typeof__(*(ptr)) __o = (old);				\
	   __atomic_compare_exchange_n((ptr), &__o, (new), false,	\
				       __KSHIM_SC, __KSHIM_SC);		\
	   __o; })
#define cmpxchg_relaxed		cmpxchg
#define cmpxchg_acquire		cmpxchg
#define cmpxchg_release		cmpxchg
#define cmpxchg64		cmpxchg
#define try_cmpxchg(ptr, oldp, new)					\
	__atomic_compare_exchange_n((ptr), (oldp), (new), false,	\
				    __KSHIM_SC, __KSHIM_SC)
#define xchg(ptr, v)		__atomic_exchange_n((ptr), (v), __KSHIM_SC)
#define smp_load_acquire(p)	__atomic_load_n((p), __ATOMIC_ACQUIRE)
#define smp_store_release(p, v)						\
	__atomic_store_n((p), (__typeof__(*(p)))(v), __ATOMIC_RELEASE)
#define smp_mb()		__atomic_thread_fence(__ATOMIC_SEQ_CST)
#define smp_rmb()		__atomic_thread_fence(__ATOMIC_ACQUIRE)
#define smp_wmb()		__atomic_thread_fence(__ATOMIC_RELEASE)
#define mb()			smp_mb()
#define rmb()			smp_rmb()
#define wmb()			smp_wmb()
#define smp_mb__before_atomic()	smp_mb()
#define smp_mb__after_atomic()	smp_mb()
#define rcu_dereference(p)		READ_ONCE(p)
#define rcu_dereference_raw(p)		READ_ONCE(p)
#define rcu_dereference_protected(p, c)	(p)
#define rcu_assign_pointer(p, v)	smp_store_release(&(p), v)
#define RCU_INIT_POINTER(p, v)		WRITE_ONCE(p, v)
#define rcu_read_lock()			do { } while (0)
#define rcu_read_unlock()		do { } while (0)
#define rcu_read_lock_sched()		preempt_disable()
#define rcu_read_unlock_sched()		preempt_enable()
#define synchronize_rcu()		might_sleep()

/*
 * Locks. One thread: a lock found held can only be held by the caller
 * itself, which on a real kernel is a deadlock.
 */
typedef struct {
	int	locked;
} raw_spinlock_t;

typedef raw_spinlock_t spinlock_t;
typedef raw_spinlock_t arch_spinlock_t;

#define __RAW_SPIN_LOCK_UNLOCKED(name)	{ 0 }
#define DEFINE_RAW_SPINLOCK(name)	raw_spinlock_t name = { 0 }
#define DEFINE_SPINLOCK(name)		spinlock_t name = { 0 }

static inline void raw_spin_lock_init(raw_spinlock_t *lock)
{
	lock->locked = 0;
}

static inline void raw_spin_lock(raw_spinlock_t *lock)
{
	if (lock->locked)
		ktap_shim_fail("spinlock recursion (self-deadlock)", lock);
	lock->locked = 1;
	ktap_shim.locks++;
	ktap_shim.preempt++;
}

static inline int raw_spin_trylock(raw_spinlock_t *lock)
{
	if (lock->locked)
		return 0;
	lock->locked = 1;
	ktap_shim.locks++;
	ktap_shim.preempt++;
	return 1;
}

static inline void raw_spin_unlock(raw_spinlock_t *lock)
{
	if (!lock->locked)
		ktap_shim_fail("unlock of a spinlock that is not held", lock);
	lock->locked = 0;
	ktap_shim.locks--;
	ktap_shim.preempt--;
}

#define raw_spin_is_locked(lock)	(!!(lock)->locked)
#define raw_spin_lock_irqsave(lock, flags)				\
	do { local_irq_save(flags); raw_spin_lock(lock); } while (0)
#define raw_spin_unlock_irqrestore(lock, flags)				\
	do { raw_spin_unlock(lock); local_irq_restore(flags); } while (0)
#define raw_spin_trylock_irqsave(lock, flags)				\
	({								\
		int __ok;						\
									\
		local_irq_save(flags);					\
		__ok = raw_spin_trylock(lock);				\
		if (!__ok)						\
			local_irq_restore(flags);			\
		__ok;							\
	})
#define raw_spin_lock_irq(lock)						\
	do { local_irq_disable(); raw_spin_lock(lock); } while (0)
#define raw_spin_unlock_irq(lock)					\
	do { raw_spin_unlock(lock); local_irq_enable(); } while (0)
#define spin_lock_init			raw_spin_lock_init
#define spin_lock			raw_spin_lock
#define spin_trylock			raw_spin_trylock
#define spin_unlock			raw_spin_unlock
#define spin_lock_irqsave		raw_spin_lock_irqsave
#define spin_unlock_irqrestore		raw_spin_unlock_irqrestore
#define spin_lock_irq			raw_spin_lock_irq
#define spin_unlock_irq			raw_spin_unlock_irq
#define spin_is_locked			raw_spin_is_locked
#define lockdep_assert_held(lock)					\
	do {								\
		if (!(lock)->locked)					\
			ktap_shim_fail("lockdep_assert_held() fails", lock); \
	} while (0)
#define lockdep_assert_not_held(lock)					\
	do {								\
		if ((lock)->locked)					\
			ktap_shim_fail("lockdep_assert_not_held() fails", lock); \
	} while (0)
#define lockdep_assert(cond)	WARN_ON(!(cond))

struct mutex {
	int	locked;
};

#define DEFINE_MUTEX(name)	struct mutex name = { 0 }
#define mutex_init(m)		((m)->locked = 0)
#define mutex_destroy(m)	do { } while (0)
#define mutex_is_locked(m)	(!!(m)->locked)

static inline void mutex_lock(struct mutex *m)
{
	might_sleep();
	if (m->locked)
		ktap_shim_fail("mutex recursion (self-deadlock)", m);
	m->locked = 1;
}

static inline int mutex_trylock(struct mutex *m)
{
	if (m->locked)
		return 0;
	m->locked = 1;
	return 1;
}

static inline void mutex_unlock(struct mutex *m)
{
	if (!m->locked)
		ktap_shim_fail("unlock of a mutex that is not held", m);
	m->locked = 0;
}

/* Sequence counts. A reader that finds a write in progress would spin. */
typedef struct {
	unsigned int	sequence;
} seqcount_t;

typedef seqcount_t seqcount_raw_spinlock_t;

#define SEQCNT_ZERO(name)	{ 0 }
#define seqcount_init(s)	((s)->sequence = 0)
#define seqcount_raw_spinlock_init(s, lock)	seqcount_init(s)

static inline unsigned int raw_read_seqcount_begin(const seqcount_t *s)
{
	unsigned int seq = __atomic_load_n(&s->sequence, __ATOMIC_ACQUIRE);

	if (seq & 1)
		ktap_shim_fail("seqcount read inside its own write section", s);
	return seq;
}

#define read_seqcount_begin(s)		raw_read_seqcount_begin(s)
#define raw_seqcount_begin(s)		(raw_read_seqcount_begin(s) & ~1U)

static inline int read_seqcount_retry(const seqcount_t *s, unsigned int start)
{
	smp_rmb();
	return __atomic_load_n(&s->sequence, __ATOMIC_RELAXED) != start;
}

#define raw_read_seqcount_retry(s, start)	read_seqcount_retry(s, start)

static inline void raw_write_seqcount_begin(seqcount_t *s)
{
	if (s->sequence & 1)
		ktap_shim_fail("nested seqcount write section", s);
	s->sequence++;
	smp_wmb();
}

static inline void raw_write_seqcount_end(seqcount_t *s)
{
	smp_wmb();
	if (!(s->sequence & 1))
		ktap_shim_fail("seqcount write end without begin", s);
	s->sequence++;
}

#define write_seqcount_begin(s)		raw_write_seqcount_begin(s)
#define write_seqcount_end(s)		raw_write_seqcount_end(s)

/*
 * Scope-based cleanup and lock guards, with the interfaces of
 * <linux/cleanup.h>: CLASS(), guard(), scoped_guard(),
 * scoped_cond_guard(), DEFINE_LOCK_GUARD_1[_COND], DEFINE_FREE, __free.
 */
#define DEFINE_FREE(_name, _type, _free)				\
	static inline void __free_##_name(void *p)			\
	{ _type _T = *(_type *)p; _free; }
#define __free(_name)		__attribute__((__cleanup__(__free_##_name)))
#define no_free_ptr(p)		({ __typeof__(p) __p = (p); (p) = NULL; __p; })
#define take_ptr(p)		no_free_ptr(p)

#define CLASS(_name, var)						\
	class_##_name##_t var						\
	__attribute__((__cleanup__(class_##_name##_destructor))) =	\
		class_##_name##_constructor

#define __DEFINE_LOCK_GUARD_1(_name, _type, _lock, ...)			\
	typedef struct {						\
		_type *lock;						\
		__VA_ARGS__;						\
	} class_##_name##_t;						\
	static inline class_##_name##_t					\
	class_##_name##_constructor(_type *l)				\
	{								\
		class_##_name##_t _t = { .lock = l }, *_T = &_t;	\
		_lock;							\
		return _t;						\
	}

#define DEFINE_LOCK_GUARD_1(_name, _type, _lock, _unlock, ...)		\
	__DEFINE_LOCK_GUARD_1(_name, _type, _lock, __VA_ARGS__)	\
	static inline void class_##_name##_destructor(class_##_name##_t *_T) \
	{								\
		if (_T->lock) {						\
			_unlock;					\
		}							\
	}								\
	static inline void *class_##_name##_lock_ptr(class_##_name##_t *_T) \
	{								\
		return _T->lock;					\
	}

#define DEFINE_LOCK_GUARD_1_COND(_name, _ext, _condlock)		\
	typedef class_##_name##_t class_##_name##_ext##_t;		\
	static inline void						\
	class_##_name##_ext##_destructor(class_##_name##_t *_T)		\
	{								\
		class_##_name##_destructor(_T);				\
	}								\
	static inline class_##_name##_t					\
	class_##_name##_ext##_constructor(typeof_member(class_##_name##_t, lock) l) \
	{								\
		class_##_name##_t _t = { .lock = l }, *_T = &_t;	\
		if (!(_condlock))					\
			_T->lock = NULL;				\
		return _t;						\
	}								\
	static inline void *						\
	class_##_name##_ext##_lock_ptr(class_##_name##_t *_T)		\
	{								\
		return _T->lock;					\
	}

#define guard(_name)		CLASS(_name, __UNIQUE_ID(guard))

#define __kshim_scoped_guard(_name, _done, args...)			\
	for (CLASS(_name, scope)(args), *_done = NULL;			\
	     class_##_name##_lock_ptr(&scope) && !(_done);		\
	     (_done) = (void *)1)
#define scoped_guard(_name, args...)					\
	__kshim_scoped_guard(_name, __UNIQUE_ID(done), args)

/* _fail may return: a statement expression can. */
#define __kshim_scoped_cond_guard(_name, _fail, _done, args...)	\
	for (CLASS(_name, scope)(args), *_done = NULL;			\
	     !(_done) && (class_##_name##_lock_ptr(&scope) ? 1 :	\
			  ({ _fail; 0; }));				\
	     (_done) = (void *)1)
#define scoped_cond_guard(_name, _fail, args...)			\
	__kshim_scoped_cond_guard(_name, _fail, __UNIQUE_ID(done), args)

/* Per-CPU data: arrays of KTAP_FUZZ_NR_CPUS. */
#define DEFINE_PER_CPU(type, name)	type name[NR_CPUS]
#define per_cpu(var, cpu)		((var)[cpu])
#define this_cpu_read(var)		((var)[smp_processor_id()])
#define __this_cpu_read(var)		this_cpu_read(var)
#define raw_cpu_read(var)		this_cpu_read(var)
#define this_cpu_write(var, v)		((var)[smp_processor_id()] = (v))
#define __this_cpu_write(var, v)	this_cpu_write(var, v)
#define this_cpu_inc(var)		((var)[smp_processor_id()]++)
#define this_cpu_dec(var)		((var)[smp_processor_id()]--)
#define this_cpu_add(var, n)		((var)[smp_processor_id()] += (n))
#define this_cpu_cmpxchg(var, o, n)					\
	({ __typeof__((var)[0]) *__p = &(var)[smp_processor_id()];	\
	   __typeof__((var)[0]) __old = *__p;				\
	   if (__old == (o))						\
		*__p = (n);						\
	   __old; })
#define this_cpu_xchg(var, n)						\
	({ __typeof__((var)[0]) *__p = &(var)[smp_processor_id()];	\
	   __typeof__((var)[0]) __old = *__p;				\
	   *__p = (n);							\
	   __old; })
/* Dynamic per-CPU memory: NR_CPUS copies side by side. */
#define alloc_percpu(type)						\
	((type *)ktap_shim_alloc(size_mul(sizeof(type), NR_CPUS),	\
				 GFP_KERNEL | __GFP_ZERO, true))
#define alloc_percpu_gfp(type, gfp)					\
	((type *)ktap_shim_alloc(size_mul(sizeof(type), NR_CPUS),	\
				 (gfp) | __GFP_ZERO, true))
#define free_percpu(p)			ktap_shim_free(p, true)
#define per_cpu_ptr(p, cpu)		(&(p)[cpu])
#define this_cpu_ptr(p)			per_cpu_ptr(p, smp_processor_id())
#define raw_cpu_ptr(p)			this_cpu_ptr(p)
#define get_cpu_ptr(p)			({ preempt_disable(); this_cpu_ptr(p); })
#define put_cpu_ptr(p)			preempt_enable()

/* Memory allocation, with fault injection and context checks. */
#define __GFP_HIGH		0x20u
#define __GFP_IO		0x40u
#define __GFP_FS		0x80u
#define __GFP_ZERO		0x100u
#define __GFP_NOWARN		0x200u
#define __GFP_DIRECT_RECLAIM	0x400u
#define __GFP_KSWAPD_RECLAIM	0x800u
#define __GFP_RETRY_MAYFAIL	0x1000u
#define __GFP_NORETRY		0x2000u
#define __GFP_NOFAIL		0x4000u
#define __GFP_ACCOUNT		0x8000u
#define __GFP_RECLAIM		(__GFP_DIRECT_RECLAIM | __GFP_KSWAPD_RECLAIM)
#define GFP_KERNEL		(__GFP_RECLAIM | __GFP_IO | __GFP_FS)
#define GFP_KERNEL_ACCOUNT	(GFP_KERNEL | __GFP_ACCOUNT)
#define GFP_ATOMIC		(__GFP_HIGH | __GFP_KSWAPD_RECLAIM)
#define GFP_NOWAIT		__GFP_KSWAPD_RECLAIM
#define GFP_NOIO		__GFP_RECLAIM
#define GFP_NOFS		(__GFP_RECLAIM | __GFP_IO)
#define GFP_USER		GFP_KERNEL
#define gfpflags_allow_blocking(gfp)	(!!((gfp) & __GFP_DIRECT_RECLAIM))

#define PAGE_SHIFT		12
#define PAGE_SIZE		(1UL << PAGE_SHIFT)
#define PAGE_MASK		(~(PAGE_SIZE - 1))
#define PAGE_ALIGN(addr)	ALIGN(addr, PAGE_SIZE)
#define offset_in_page(p)	((unsigned long)(p) & ~PAGE_MASK)
#define KMALLOC_MAX_SIZE	(1UL << 22)

void *ktap_shim_alloc(size_t size, gfp_t gfp, bool vmalloc);
void ktap_shim_free(const void *p, bool vmalloc);

#define ZERO_SIZE_PTR		((void *)16)
#define ZERO_OR_NULL_PTR(x)	((unsigned long)(x) <= (unsigned long)ZERO_SIZE_PTR)

static inline void *kmalloc(size_t size, gfp_t gfp)
{
	return ktap_shim_alloc(size, gfp, false);
}

static inline void *kzalloc(size_t size, gfp_t gfp)
{
	return ktap_shim_alloc(size, gfp | __GFP_ZERO, false);
}

static inline void *kmalloc_array(size_t n, size_t size, gfp_t gfp)
{
	return ktap_shim_alloc(size_mul(n, size), gfp, false);
}

static inline void *kcalloc(size_t n, size_t size, gfp_t gfp)
{
	return ktap_shim_alloc(size_mul(n, size), gfp | __GFP_ZERO, false);
}

static inline void kfree(const void *p)
{
	ktap_shim_free(p, false);
}

#define kfree_sensitive(p)	kfree(p)
#define kmalloc_node(s, g, n)	kmalloc(s, g)
#define kzalloc_node(s, g, n)	kzalloc(s, g)

static inline void *kmemdup(const void *src, size_t len, gfp_t gfp)
{
	void *p = ktap_shim_alloc(len, gfp, false);

	if (p)
		memcpy(p, src, len);
	return p;
}

static inline char *kstrdup(const char *s, gfp_t gfp)
{
	return s ? kmemdup(s, strlen(s) + 1, gfp) : NULL;
}

static inline char *kstrndup(const char *s, size_t max, gfp_t gfp)
{
	size_t len;
	char *p;

	if (!s)
		return NULL;
	len = strnlen(s, max);
	p = ktap_shim_alloc(len + 1, gfp, false);
	if (p) {
		memcpy(p, s, len);
		p[len] = '\0';
	}
	return p;
}

void *krealloc(const void *p, size_t new_size, gfp_t gfp);

/* kvmalloc: refuses (and WARNs, as the kernel does) above INT_MAX. */
void *ktap_shim_kvmalloc(size_t size, gfp_t gfp);

static inline void *kvmalloc(size_t size, gfp_t gfp)
{
	return ktap_shim_kvmalloc(size, gfp);
}

static inline void *kvzalloc(size_t size, gfp_t gfp)
{
	return ktap_shim_kvmalloc(size, gfp | __GFP_ZERO);
}

static inline void *kvmalloc_array(size_t n, size_t size, gfp_t gfp)
{
	return ktap_shim_kvmalloc(size_mul(n, size), gfp);
}

static inline void *kvcalloc(size_t n, size_t size, gfp_t gfp)
{
	return ktap_shim_kvmalloc(size_mul(n, size), gfp | __GFP_ZERO);
}

static inline void kvfree(const void *p)
{
	ktap_shim_free(p, true);
}

#define kvfree_sensitive(p, len)	kvfree(p)

static inline void *kvmemdup(const void *src, size_t len, gfp_t gfp)
{
	void *p = ktap_shim_kvmalloc(len, gfp);

	if (p)
		memcpy(p, src, len);
	return p;
}

static inline void *vmalloc(size_t size)
{
	return ktap_shim_alloc(size, GFP_KERNEL, true);
}

static inline void *vzalloc(size_t size)
{
	return ktap_shim_alloc(size, GFP_KERNEL | __GFP_ZERO, true);
}

static inline void *vmalloc_array(size_t n, size_t size)
{
	return ktap_shim_alloc(size_mul(n, size), GFP_KERNEL, true);
}

static inline void *vcalloc(size_t n, size_t size)
{
	return ktap_shim_alloc(size_mul(n, size), GFP_KERNEL | __GFP_ZERO, true);
}

static inline void vfree(const void *p)
{
	ktap_shim_free(p, true);
}

static inline void *__vmalloc(size_t size, gfp_t gfp)
{
	return ktap_shim_alloc(size, gfp, true);
}

#define vmalloc_node(s, n)	vmalloc(s)
#define vzalloc_node(s, n)	vzalloc(s)
#define kvzalloc_node(s, gfp, n) kvzalloc(s, gfp)

DEFINE_FREE(kfree, void *, if (!IS_ERR_OR_NULL(_T)) kfree(_T))
DEFINE_FREE(kvfree, void *, if (!IS_ERR_OR_NULL(_T)) kvfree(_T))
DEFINE_FREE(vfree, void *, if (!IS_ERR_OR_NULL(_T)) vfree(_T))

/* Users: the fake current task and credentials. */
#define TASK_COMM_LEN		16
#define TASK_RUNNING		0x0000
#define TASK_INTERRUPTIBLE	0x0001
#define TASK_UNINTERRUPTIBLE	0x0002
#define PF_KTHREAD		0x00200000

struct task_struct {
	unsigned int	__state;
	unsigned int	flags;
	int		prio;
	int		static_prio;
	int		normal_prio;
	unsigned int	policy;
	int		pid;
	int		tgid;
	unsigned int	in_iowait:1;
	char		comm[TASK_COMM_LEN];
};

extern struct task_struct ktap_shim_task;
#define current			(&ktap_shim_task)
#define get_current()		current

static inline int task_pid_nr(struct task_struct *t)
{
	return t->pid;
}

static inline int task_tgid_nr(struct task_struct *t)
{
	return t->tgid;
}

#define task_pid_vnr(t)		task_pid_nr(t)
#define task_tgid_vnr(t)	task_tgid_nr(t)
#define task_is_running(t)	(READ_ONCE((t)->__state) == TASK_RUNNING)

/* The harness can make a signal arrive after N checks (main budget). */
static inline int signal_pending(struct task_struct *t)
{
	(void)t;
	return ktap_shim.signal_after &&
	       ++ktap_shim.signal_checks >= ktap_shim.signal_after;
}

#define fatal_signal_pending(t)		signal_pending(t)
#define __fatal_signal_pending(t)	signal_pending(t)
#define signal_pending_state(state, t)	signal_pending(t)
#define SIGKILL			9

typedef struct {
	unsigned int	val;
} kuid_t;

typedef struct {
	unsigned int	val;
} kgid_t;

struct user_namespace {
	int	level;
};

extern struct user_namespace init_user_ns;

#define KUIDT_INIT(v)		((kuid_t){ v })
#define KGIDT_INIT(v)		((kgid_t){ v })
#define GLOBAL_ROOT_UID		KUIDT_INIT(0)
#define GLOBAL_ROOT_GID		KGIDT_INIT(0)
#define current_uid()		KUIDT_INIT(1000)
#define current_euid()		KUIDT_INIT(1000)
#define current_gid()		KGIDT_INIT(1000)
#define current_user_ns()	(&init_user_ns)
#define uid_eq(a, b)		((a).val == (b).val)
#define from_kuid(ns, uid)		((uid).val)
#define from_kuid_munged(ns, uid)	((uid).val)
#define from_kgid(ns, gid)		((gid).val)
#define from_kgid_munged(ns, gid)	((gid).val)

#define CAP_SYS_ADMIN		21
#define CAP_PERFMON		38
#define CAP_BPF			39
#define capable(cap)		true
#define perfmon_capable()	true
#define bpf_capable()		true
#define security_locked_down(what)	0

/* Time: a fake clock that moves forward 1 µs per reading. */
#define NSEC_PER_USEC		1000L
#define NSEC_PER_MSEC		1000000L
#define NSEC_PER_SEC		1000000000L
#define USEC_PER_MSEC		1000L
#define USEC_PER_SEC		1000000L
#define MSEC_PER_SEC		1000L
#define HZ			250
#define KTIME_MAX		S64_MAX

static inline u64 ktap_shim_clock(void)
{
	ktap_shim.clock += 1000;
	return ktap_shim.clock;
}

#define ktime_get_ns()			ktap_shim_clock()
#define ktime_get_real_ns()		(ktap_shim_clock() + 1700000000000000000ULL)
#define ktime_get_real_fast_ns()	ktime_get_real_ns()
#define ktime_get_mono_fast_ns()	ktap_shim_clock()
#define ktime_get_boot_fast_ns()	ktap_shim_clock()
#define ktime_get_raw_fast_ns()		ktap_shim_clock()
#define ktime_get_boottime_ns()		ktap_shim_clock()
#define ktime_get()			((ktime_t)ktap_shim_clock())
#define ktime_to_ns(kt)			((s64)(kt))
#define ns_to_ktime(ns)			((ktime_t)(ns))
#define local_clock()			ktap_shim_clock()
#define sched_clock()			ktap_shim_clock()
#define trace_clock_local()		ktap_shim_clock()
#define jiffies				((unsigned long)(ktap_shim.clock / 4000000))
#define get_jiffies_64()		((u64)jiffies)
#define msecs_to_jiffies(m)		((unsigned long)(m) / 4)
#define jiffies_to_msecs(j)		((unsigned int)(j) * 4)

/* Random numbers: deterministic per input, so that reproducers replay. */
static inline u32 get_random_u32(void)
{
	u64 x = ktap_shim.random;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	ktap_shim.random = x;
	return (u32)(x >> 11);
}

static inline u64 get_random_u64(void)
{
	return (u64)get_random_u32() << 32 | get_random_u32();
}

static inline u32 get_random_u32_below(u32 ceil)
{
	return ceil ? get_random_u32() % ceil : 0;
}

#define get_random_int()	get_random_u32()
#define prandom_u32_max(c)	get_random_u32_below(c)

static inline void get_random_bytes(void *buf, size_t len)
{
	u8 *p = buf;

	while (len--)
		*p++ = (u8)get_random_u32();
}

/* Sorting: an in-place heapsort like lib/sort.c (no recursion, no alloc). */
typedef int (*cmp_func_t)(const void *a, const void *b);
typedef int (*cmp_r_func_t)(const void *a, const void *b, const void *priv);
typedef void (*swap_func_t)(void *a, void *b, int size);
typedef void (*swap_r_func_t)(void *a, void *b, int size, const void *priv);

void sort_r(void *base, size_t num, size_t size, cmp_r_func_t cmp,
	    swap_r_func_t swap, const void *priv);
void sort(void *base, size_t num, size_t size, cmp_func_t cmp,
	  swap_func_t swap);

/* seq_buf: the kernel's bounded text buffer (shim.c implements it). */
struct seq_buf {
	char	*buffer;
	size_t	size;
	size_t	len;
};

#define DECLARE_SEQ_BUF(name, sz)					\
	char __##name##_buf[sz];					\
	struct seq_buf name = { .buffer = __##name##_buf, .size = sz }

static inline void seq_buf_clear(struct seq_buf *s)
{
	s->len = 0;
	if (s->size)
		s->buffer[0] = '\0';
}

static inline void seq_buf_init(struct seq_buf *s, char *buf,
				unsigned int size)
{
	s->buffer = buf;
	s->size = size;
	seq_buf_clear(s);
}

static inline bool seq_buf_has_overflowed(struct seq_buf *s)
{
	return s->len > s->size;
}

static inline void seq_buf_set_overflow(struct seq_buf *s)
{
	s->len = s->size + 1;
}

static inline unsigned int seq_buf_used(struct seq_buf *s)
{
	return (unsigned int)min(s->len, s->size);
}

static inline size_t seq_buf_buffer_left(struct seq_buf *s)
{
	if (seq_buf_has_overflowed(s))
		return 0;
	return s->size - s->len;
}

static inline char *seq_buf_str(struct seq_buf *s)
{
	if (WARN_ON(s->size == 0))
		return (char *)"";
	if (seq_buf_buffer_left(s))
		s->buffer[s->len] = '\0';
	else
		s->buffer[s->size - 1] = '\0';
	return s->buffer;
}

int seq_buf_printf(struct seq_buf *s, const char *fmt, ...) __printf(2, 3);
int seq_buf_vprintf(struct seq_buf *s, const char *fmt, va_list args)
	__printf(2, 0);
int seq_buf_puts(struct seq_buf *s, const char *str);
int seq_buf_putc(struct seq_buf *s, unsigned char c);
int seq_buf_putmem(struct seq_buf *s, const void *mem, unsigned int len);

/* ioctl numbers (the UAPI header defines its commands with these). */
#define _IOC_NRSHIFT		0
#define _IOC_TYPESHIFT		8
#define _IOC_SIZESHIFT		16
#define _IOC_DIRSHIFT		30
#define _IOC_NONE		0U
#define _IOC_WRITE		1U
#define _IOC_READ		2U
#define _IOC(dir, type, nr, size)					\
	(((dir) << _IOC_DIRSHIFT) | ((type) << _IOC_TYPESHIFT) |	\
	 ((nr) << _IOC_NRSHIFT) | ((size) << _IOC_SIZESHIFT))
#define _IO(type, nr)		_IOC(_IOC_NONE, (type), (nr), 0)
#define _IOR(type, nr, t)	_IOC(_IOC_READ, (type), (nr), sizeof(t))
#define _IOW(type, nr, t)	_IOC(_IOC_WRITE, (type), (nr), sizeof(t))
#define _IOWR(type, nr, t)	_IOC(_IOC_READ | _IOC_WRITE, (type), (nr), sizeof(t))

/* Unaligned access. */
#define get_unaligned(p)						\
	({ union { __typeof__(*(p)) v; unsigned char b[sizeof(*(p))]; } __u; \
	   memcpy(__u.b, (p), sizeof(__u.b)); __u.v; })
#define put_unaligned(v, p)						\
	do { __typeof__(*(p)) __v = (v); memcpy((p), &__v, sizeof(__v)); } while (0)

/* The machine: uname, stack traces, memory that may fault. */
#define __NEW_UTS_LEN		64

struct new_utsname {
	char	sysname[__NEW_UTS_LEN + 1];
	char	nodename[__NEW_UTS_LEN + 1];
	char	release[__NEW_UTS_LEN + 1];
	char	version[__NEW_UTS_LEN + 1];
	char	machine[__NEW_UTS_LEN + 1];
	char	domainname[__NEW_UTS_LEN + 1];
};

struct new_utsname *init_utsname(void);
#define utsname()		init_utsname()

unsigned int stack_trace_save(unsigned long *store, unsigned int size,
			      unsigned int skipnr);
unsigned int stack_trace_save_user(unsigned long *store, unsigned int size);

/*
 * Reads of arbitrary addresses fault (-EFAULT) except inside the
 * harness's readable region (ktap_shim_readable), so that scripts can
 * read strings from addresses an event hands them.
 */
extern char *ktap_shim_readable;
extern size_t ktap_shim_readable_len;
long copy_from_kernel_nofault(void *dst, const void *src, size_t size);
long copy_from_user_nofault(void *dst, const void __user *src, size_t size);
long strncpy_from_kernel_nofault(char *dst, const void *src, long count);
long strncpy_from_user_nofault(char *dst, const void __user *src,
			       long count);
#define access_ok(addr, size)	true

#endif /* _KTAP_SHIM_H */
