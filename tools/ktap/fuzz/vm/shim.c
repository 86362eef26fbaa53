// SPDX-License-Identifier: GPL-2.0
/*
 * Out-of-line parts of the userspace kernel shim (include/ktap_shim.h):
 * the fake machine state, allocation with fault injection, seq_buf,
 * sort, string helpers, jhash, and memory reads that may fault.
 */
#include <linux/kernel.h>
#include <linux/seq_buf.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <linux/utsname.h>

struct ktap_shim_state ktap_shim;

struct task_struct ktap_shim_task = {
	.__state	= TASK_RUNNING,
	.prio		= 120,
	.static_prio	= 120,
	.normal_prio	= 120,
	.pid		= 4242,
	.tgid		= 4240,
	.comm		= "fuzz-task",
};

struct user_namespace init_user_ns;

char *ktap_shim_readable;
size_t ktap_shim_readable_len;

void ktap_shim_reset(void)
{
	memset(&ktap_shim, 0, sizeof(ktap_shim));
	ktap_shim.clock = 1000000000ULL;
	ktap_shim.random = 0x9e3779b97f4a7c15ULL;
}

void ktap_shim_warn(const char *file, int line, const char *what,
		    const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "WARNING: %s:%d: %s: ", file, line, what);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

void ktap_shim_fail(const char *what, const void *obj)
{
	fprintf(stderr, "BUG: %s (%p): cpu %u context %#x preempt %d irqs_off %d locks %d\n",
		what, obj, ktap_shim.cpu, ktap_shim.context, ktap_shim.preempt,
		ktap_shim.irqs_off, ktap_shim.locks);
	abort();
}

/*
 * Allocations. Zero-size requests get a real (empty) allocation so that
 * ASan flags any access. The vmalloc family and blocking GFP flags may
 * sleep: calling them in atomic context is a bug.
 */
#define KTAP_SHIM_ALLOC_MAX	(256UL << 20)

void *ktap_shim_alloc(size_t size, gfp_t gfp, bool vmalloc)
{
	if (vmalloc || gfpflags_allow_blocking(gfp))
		might_sleep();
	if (vmalloc && in_nmi())
		ktap_shim_fail("vmalloc in NMI", NULL);
	ktap_shim.allocs++;
	if (ktap_shim.fail_alloc_at && ktap_shim.allocs == ktap_shim.fail_alloc_at)
		return NULL;
	if (size > KTAP_SHIM_ALLOC_MAX || (!vmalloc && size > KMALLOC_MAX_SIZE))
		return NULL;
	if (gfp & __GFP_ZERO)
		return calloc(1, size);
	return malloc(size);
}

void ktap_shim_free(const void *p, bool vmalloc)
{
	if (vmalloc && p && in_interrupt())
		ktap_shim_fail("vfree in interrupt context", p);
	if (p != ZERO_SIZE_PTR)
		free((void *)p);
}

void *ktap_shim_kvmalloc(size_t size, gfp_t gfp)
{
	if (size > INT_MAX) {
		WARN_ON_ONCE(!(gfp & __GFP_NOWARN));
		return NULL;
	}
	return ktap_shim_alloc(size, gfp, false);
}

void *krealloc(const void *p, size_t new_size, gfp_t gfp)
{
	void *q;

	if (gfpflags_allow_blocking(gfp))
		might_sleep();
	ktap_shim.allocs++;
	if (ktap_shim.fail_alloc_at && ktap_shim.allocs == ktap_shim.fail_alloc_at)
		return NULL;
	if (new_size > KMALLOC_MAX_SIZE)
		return NULL;
	q = realloc((void *)p, new_size);
	return q;
}

char *kasprintf(gfp_t gfp, const char *fmt, ...)
{
	va_list ap;
	char *p;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	p = ktap_shim_alloc((size_t)n + 1, gfp, false);
	if (!p)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

/* Strings. */
void *memchr_inv(const void *start, int c, size_t bytes)
{
	const u8 *p = start;
	size_t i;

	for (i = 0; i < bytes; i++) {
		if (p[i] != (u8)c)
			return (void *)(p + i);
	}
	return NULL;
}

long ktap_shim_strscpy(char *dst, const char *src, size_t size)
{
	size_t len;

	if (!size)
		return -E2BIG;
	len = strnlen(src, size);
	if (len == size) {
		memcpy(dst, src, size - 1);
		dst[size - 1] = '\0';
		return -E2BIG;
	}
	memcpy(dst, src, len + 1);
	return (long)len;
}

long ktap_shim_strscpy_pad(char *dst, const char *src, size_t size)
{
	long n = ktap_shim_strscpy(dst, src, size);
	size_t used = n < 0 ? size : (size_t)n + 1;

	if (used < size)
		memset(dst + used, 0, size - used);
	return n;
}

int vscnprintf(char *buf, size_t size, const char *fmt, va_list args)
{
	int n;

	if (!size)
		return 0;
	n = vsnprintf(buf, size, fmt, args);
	if (n < 0)
		return 0;
	return (size_t)n < size ? n : (int)(size - 1);
}

int scnprintf(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vscnprintf(buf, size, fmt, ap);
	va_end(ap);
	return n;
}

/*
 * kstrto*: the whole string must be a number, optionally followed by
 * one newline. Base 0 picks 16 for "0x", 8 for a leading 0, else 10;
 * base 16 accepts a "0x" prefix. Out of range is -ERANGE.
 */
static int ktap_shim_parse(const char *s, unsigned int base,
			   unsigned long long *res)
{
	unsigned long long v = 0;
	unsigned int d;
	const char *p;

	if (base == 0) {
		if (s[0] == '0' && _tolower(s[1]) == 'x' && isxdigit(s[2]))
			base = 16;
		else if (s[0] == '0')
			base = 8;
		else
			base = 10;
	}
	if (base == 16 && s[0] == '0' && _tolower(s[1]) == 'x')
		s += 2;
	for (p = s; *p; p++) {
		if (isdigit(*p))
			d = *p - '0';
		else if (_tolower(*p) >= 'a' && _tolower(*p) <= 'f')
			d = _tolower(*p) - 'a' + 10;
		else
			break;
		if (d >= base)
			break;
		if (__builtin_mul_overflow(v, base, &v) ||
		    __builtin_add_overflow(v, d, &v))
			return -ERANGE;
	}
	if (p == s)
		return -EINVAL;
	if (*p == '\n')
		p++;
	if (*p)
		return -EINVAL;
	*res = v;
	return 0;
}

int kstrtoull(const char *s, unsigned int base, unsigned long long *res)
{
	if (s[0] == '+')
		s++;
	return ktap_shim_parse(s, base, res);
}

int kstrtoll(const char *s, unsigned int base, long long *res)
{
	unsigned long long v;
	int err;

	if (s[0] == '-') {
		err = ktap_shim_parse(s + 1, base, &v);
		if (err)
			return err;
		if (v > (unsigned long long)LLONG_MAX + 1)
			return -ERANGE;
		*res = (long long)(0 - v);
		return 0;
	}
	err = kstrtoull(s, base, &v);
	if (err)
		return err;
	if (v > (unsigned long long)LLONG_MAX)
		return -ERANGE;
	*res = (long long)v;
	return 0;
}

int kstrtoul(const char *s, unsigned int base, unsigned long *res)
{
	unsigned long long v;
	int err = kstrtoull(s, base, &v);

	if (!err)
		*res = v;
	return err;
}

int kstrtol(const char *s, unsigned int base, long *res)
{
	long long v;
	int err = kstrtoll(s, base, &v);

	if (!err)
		*res = v;
	return err;
}

int kstrtouint(const char *s, unsigned int base, unsigned int *res)
{
	unsigned long long v;
	int err = kstrtoull(s, base, &v);

	if (err)
		return err;
	if (v > UINT_MAX)
		return -ERANGE;
	*res = (unsigned int)v;
	return 0;
}

int kstrtoint(const char *s, unsigned int base, int *res)
{
	long long v;
	int err = kstrtoll(s, base, &v);

	if (err)
		return err;
	if (v < INT_MIN || v > INT_MAX)
		return -ERANGE;
	*res = (int)v;
	return 0;
}

/*
 * jhash stand-in: same interface, a different (FNV-1a based, finally
 * avalanched) function. Only the distribution matters to the VM.
 */
u32 jhash(const void *key, u32 length, u32 initval)
{
	const u8 *p = key;
	u32 h = 2166136261U ^ initval, i;

	for (i = 0; i < length; i++) {
		h ^= p[i];
		h *= 16777619U;
	}
	h ^= length;
	h ^= h >> 16;
	h *= 0x85ebca6bU;
	h ^= h >> 13;
	h *= 0xc2b2ae35U;
	h ^= h >> 16;
	return h;
}

u32 jhash2(const u32 *k, u32 length, u32 initval)
{
	return jhash(k, length * 4, initval);
}

/* seq_buf, with the kernel's overflow rules. */
int seq_buf_vprintf(struct seq_buf *s, const char *fmt, va_list args)
{
	int n;

	WARN_ON(s->size == 0);
	if (s->len < s->size) {
		n = vsnprintf(s->buffer + s->len, s->size - s->len, fmt, args);
		if (n >= 0 && s->len + n < s->size) {
			s->len += n;
			return 0;
		}
	}
	seq_buf_set_overflow(s);
	return -1;
}

int seq_buf_printf(struct seq_buf *s, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = seq_buf_vprintf(s, fmt, ap);
	va_end(ap);
	return ret;
}

int seq_buf_puts(struct seq_buf *s, const char *str)
{
	size_t len = strlen(str) + 1;	/* with the NUL, not counted */

	WARN_ON(s->size == 0);
	if (s->len + len <= s->size) {
		memcpy(s->buffer + s->len, str, len);
		s->len += len - 1;
		return 0;
	}
	seq_buf_set_overflow(s);
	return -1;
}

int seq_buf_putc(struct seq_buf *s, unsigned char c)
{
	WARN_ON(s->size == 0);
	if (s->len + 1 < s->size) {
		s->buffer[s->len++] = c;
		return 0;
	}
	seq_buf_set_overflow(s);
	return -1;
}

int seq_buf_putmem(struct seq_buf *s, const void *mem, unsigned int len)
{
	WARN_ON(s->size == 0);
	if (s->len + len < s->size) {
		memcpy(s->buffer + s->len, mem, len);
		s->len += len;
		return 0;
	}
	seq_buf_set_overflow(s);
	return -1;
}

/* Heapsort, byte-wise swaps. */
static void ktap_shim_swap(void *a, void *b, size_t size)
{
	u8 *x = a, *y = b, t;

	while (size--) {
		t = *x;
		*x++ = *y;
		*y++ = t;
	}
}

struct ktap_shim_sort {
	cmp_func_t	cmp;
	cmp_r_func_t	cmp_r;
	swap_r_func_t	swap_r;
	swap_func_t	swap_fn;
	const void	*priv;
};

static int ktap_shim_sort_cmp(const struct ktap_shim_sort *ss,
			      const void *a, const void *b)
{
	return ss->cmp_r ? ss->cmp_r(a, b, ss->priv) : ss->cmp(a, b);
}

static void ktap_shim_sort_swap(const struct ktap_shim_sort *ss,
				void *a, void *b, size_t size)
{
	if (ss->swap_r)
		ss->swap_r(a, b, (int)size, ss->priv);
	else if (ss->swap_fn)
		ss->swap_fn(a, b, (int)size);
	else
		ktap_shim_swap(a, b, size);
}

static void ktap_shim_sift(const struct ktap_shim_sort *ss, char *base,
			   size_t size, size_t root, size_t n)
{
	size_t child;

	while ((child = 2 * root + 1) < n) {
		if (child + 1 < n &&
		    ktap_shim_sort_cmp(ss, base + child * size,
				       base + (child + 1) * size) < 0)
			child++;
		if (ktap_shim_sort_cmp(ss, base + root * size,
				       base + child * size) >= 0)
			return;
		ktap_shim_sort_swap(ss, base + root * size,
				    base + child * size, size);
		root = child;
	}
}

static void ktap_shim_heapsort(const struct ktap_shim_sort *ss, void *base,
			       size_t num, size_t size)
{
	char *b = base;
	size_t i;

	if (num < 2 || !size)
		return;
	for (i = num / 2; i-- > 0;)
		ktap_shim_sift(ss, b, size, i, num);
	for (i = num - 1; i > 0; i--) {
		ktap_shim_sort_swap(ss, b, b + i * size, size);
		ktap_shim_sift(ss, b, size, 0, i);
	}
}

void sort_r(void *base, size_t num, size_t size, cmp_r_func_t cmp,
	    swap_r_func_t swap_fn, const void *priv)
{
	struct ktap_shim_sort ss = {
		.cmp_r = cmp, .swap_r = swap_fn, .priv = priv,
	};

	ktap_shim_heapsort(&ss, base, num, size);
}

void sort(void *base, size_t num, size_t size, cmp_func_t cmp,
	  swap_func_t swap_fn)
{
	struct ktap_shim_sort ss = { .cmp = cmp, .swap_fn = swap_fn };

	ktap_shim_heapsort(&ss, base, num, size);
}

/* The machine. */
struct new_utsname *init_utsname(void)
{
	static struct new_utsname uts = {
		.sysname	= "Linux",
		.nodename	= "fuzz",
		.release	= "6.12.0-ktap-fuzz",
		.version	= "#1 SMP",
		.machine	= "x86_64",
		.domainname	= "(none)",
	};

	return &uts;
}

unsigned int stack_trace_save(unsigned long *store, unsigned int size,
			      unsigned int skipnr)
{
	unsigned int i, n = min(size, 3U);

	for (i = 0; i < n; i++)
		store[i] = 0xffffffff81000000UL + 0x100 * (i + skipnr);
	return n;
}

unsigned int stack_trace_save_user(unsigned long *store, unsigned int size)
{
	unsigned int i, n = min(size, 2U);

	for (i = 0; i < n; i++)
		store[i] = 0x400000UL + 0x10 * i;
	return n;
}

/* Whether [src, src + size) lies inside the readable region. */
static bool ktap_shim_can_read(const void *src, size_t size)
{
	uintptr_t a = (uintptr_t)src, lo = (uintptr_t)ktap_shim_readable;

	if (!ktap_shim_readable || a < lo)
		return false;
	return size <= ktap_shim_readable_len &&
	       a - lo <= ktap_shim_readable_len - size;
}

long copy_from_kernel_nofault(void *dst, const void *src, size_t size)
{
	if (!ktap_shim_can_read(src, size))
		return -EFAULT;
	memcpy(dst, src, size);
	return 0;
}

long copy_from_user_nofault(void *dst, const void __user *src, size_t size)
{
	return copy_from_kernel_nofault(dst, (const void *)src, size);
}

static long ktap_shim_strncpy_nofault(char *dst, const void *src, long count)
{
	const char *s = src;
	long i;

	if (count <= 0)
		return 0;
	for (i = 0; i < count - 1; i++) {
		if (!ktap_shim_can_read(s + i, 1)) {
			dst[0] = '\0';
			return -EFAULT;
		}
		dst[i] = s[i];
		if (!s[i])
			return i + 1;
	}
	dst[i] = '\0';
	return count;
}

long strncpy_from_kernel_nofault(char *dst, const void *src, long count)
{
	return ktap_shim_strncpy_nofault(dst, src, count);
}

long strncpy_from_user_nofault(char *dst, const void __user *src, long count)
{
	return ktap_shim_strncpy_nofault(dst, (const void *)src, count);
}
