// SPDX-License-Identifier: GPL-2.0
/*
 * ktap VM objects: the per-session memory pool, interned strings,
 * tables, per-CPU statistics tables (ptable) and iterators.
 *
 * Everything here may run in probe context, including NMI: nothing
 * sleeps, nothing frees. The pool is one vzalloc()ed region handed out
 * by an atomic bump pointer; it is freed as a whole by ktap_vm_free(),
 * so a pointer to any object stays valid for the life of the session.
 * Table growth abandons the old array/hash parts in the pool.
 *
 * Locking: strings are interned lock-free (cmpxchg into an insert-only
 * open-addressing set). Each table has its own raw spinlock (the
 * ktap_spin_try guard: trylock in NMI, which reports -EBUSY so the
 * caller counts a drop). No operation holds two table locks at once.
 */
#include <linux/jhash.h>
#include <linux/hash.h>
#include <linux/log2.h>
#include <linux/minmax.h>
#include <linux/overflow.h>
#include <linux/random.h>
#include <linux/sort.h>
#include <linux/string.h>
#include <linux/vmalloc.h>
#include "vm.h"

#define KTAP_STR_PROBES		64
#define KTAP_ARRAY_MAX		BIT(24)

static const char * const ktap_type_names[] = {
	[KTAP_TNIL]	= "nil",
	[KTAP_TBOOL]	= "boolean",
	[KTAP_TINT]	= "number",
	[KTAP_TSTR]	= "string",
	[KTAP_TTABLE]	= "table",
	[KTAP_TPTABLE]	= "ptable",
	[KTAP_TSTAT]	= "statistic",
	[KTAP_TFUNC]	= "function",
	[KTAP_TNATIVE]	= "function",
	[KTAP_TEVENT]	= "event",
	[KTAP_TITER]	= "iterator",
};

const char *ktap_typename(u32 type)
{
	if (type < ARRAY_SIZE(ktap_type_names))
		return ktap_type_names[type];
	return "?";
}

static bool ktap_str_equal(const struct ktap_str *a, const struct ktap_str *b)
{
	if (a == b)
		return true;
	if (a->interned && b->interned)
		return false;
	return a->len == b->len && a->hash == b->hash &&
	       !memcmp(a->data, b->data, a->len);
}

/**
 * ktap_value_equal - the == of the language
 * @a: left operand
 * @b: right operand
 *
 * Integers and booleans compare by value, strings by contents (pointer
 * equality when both are interned), everything else by identity.
 *
 * Return: whether @a equals @b.
 */
bool ktap_value_equal(const struct ktap_value *a, const struct ktap_value *b)
{
	if (a->type != b->type)
		return false;
	switch (a->type) {
	case KTAP_TNIL:
		return true;
	case KTAP_TBOOL:
		return a->b == b->b;
	case KTAP_TINT:
		return a->i == b->i;
	case KTAP_TSTR:
		return ktap_str_equal(a->s, b->s);
	default:
		return a->p == b->p;
	}
}

/* The pool. */

int ktap_pool_init(struct ktap_pool *pool, size_t size)
{
	pool->base = vzalloc(size);
	if (!pool->base)
		return -ENOMEM;
	pool->size = size;
	atomic_long_set(&pool->used, 0);
	return 0;
}

void ktap_pool_destroy(struct ktap_pool *pool)
{
	vfree(pool->base);
	pool->base = NULL;
}

/**
 * ktap_alloc - allocate zeroed memory from the session pool
 * @vm: the session
 * @size: bytes wanted
 *
 * Lock-free and NMI-safe: one cmpxchg loop on the bump pointer. Memory
 * is zero because the pool is never reused.
 *
 * Return: 8-byte aligned memory, or NULL when the pool is exhausted.
 */
void *ktap_alloc(struct ktap_vm *vm, size_t size)
{
	struct ktap_pool *pool = &vm->pool;
	long old, new;

	if (size > pool->size)
		return NULL;
	size = ALIGN(size, 8);
	old = atomic_long_read(&pool->used);
	do {
		if (size > pool->size - old)
			return NULL;
		new = old + size;
	} while (!atomic_long_try_cmpxchg(&pool->used, &old, new));
	return pool->base + old;
}

/* Strings. */

int ktap_strset_init(struct ktap_strset *set, size_t mem_limit)
{
	size_t n = clamp_t(size_t, mem_limit / 128, 1024, 1U << 20);

	n = roundup_pow_of_two(n);
	set->slots = kvcalloc(n, sizeof(*set->slots), GFP_KERNEL);
	if (!set->slots)
		return -ENOMEM;
	set->mask = n - 1;
	set->seed = get_random_u32();
	return 0;
}

void ktap_strset_destroy(struct ktap_strset *set)
{
	kvfree(set->slots);
	set->slots = NULL;
}

u32 ktap_str_hash(struct ktap_vm *vm, const char *s, u32 len)
{
	return jhash(s, len, vm->strs.seed);
}

static struct ktap_str *ktap_str_alloc(struct ktap_vm *vm, const char *s,
				       u32 len, u32 hash)
{
	struct ktap_str *str = ktap_alloc(vm, sizeof(*str) + len + 1);

	if (!str)
		return NULL;
	memcpy(str->data, s, len);
	str->data[len] = '\0';
	str->len = len;
	str->hash = hash;
	str->interned = true;
	return str;
}

/**
 * ktap_str_intern - the unique pool copy of a string
 * @vm: the session
 * @s: bytes
 * @len: length of @s
 *
 * Lock-free: a new string is published with cmpxchg into an empty slot
 * of the insert-only set; a racing insert of the same bytes makes the
 * loser use the winner's copy (its own allocation is abandoned).
 *
 * Return: the interned string, or NULL when the pool or the set is full.
 */
struct ktap_str *ktap_str_intern(struct ktap_vm *vm, const char *s, u32 len)
{
	struct ktap_strset *set = &vm->strs;
	struct ktap_str *fresh = NULL, *cur;
	u32 hash, idx, n;

	if (len > KTAP_STR_MAX)
		return NULL;
	hash = ktap_str_hash(vm, s, len);
	idx = hash & set->mask;
	for (n = 0; n < KTAP_STR_PROBES; n++, idx = (idx + 1) & set->mask) {
		cur = READ_ONCE(set->slots[idx]);
		if (!cur) {
			if (!fresh) {
				fresh = ktap_str_alloc(vm, s, len, hash);
				if (!fresh)
					return NULL;
			}
			cur = cmpxchg(&set->slots[idx], NULL, fresh);
			if (!cur)
				return fresh;
		}
		if (cur->hash == hash && cur->len == len &&
		    !memcmp(cur->data, s, len))
			return cur;
	}
	return NULL;
}

/**
 * ktap_str_find - the interned copy of @s, without inserting
 * @vm: the session
 * @s: any string
 *
 * Return: the interned string equal to @s, or NULL if there is none
 * (then no table can hold @s as a key).
 */
struct ktap_str *ktap_str_find(struct ktap_vm *vm, const struct ktap_str *s)
{
	struct ktap_strset *set = &vm->strs;
	struct ktap_str *cur;
	u32 idx, n;

	if (s->interned)
		return (struct ktap_str *)s;
	idx = s->hash & set->mask;
	for (n = 0; n < KTAP_STR_PROBES; n++, idx = (idx + 1) & set->mask) {
		cur = READ_ONCE(set->slots[idx]);
		if (!cur)
			return NULL;
		if (ktap_str_equal(cur, s))
			return cur;
	}
	return NULL;
}

/**
 * ktap_str_temp - a string that lives for the current run only
 * @x: the run
 * @s: bytes
 * @len: length of @s
 *
 * Taken from the run's scratch area (reset at every firing) so that
 * formatting event text does not consume the session pool. Falls back
 * to interning when the scratch area is full.
 *
 * Return: the string, or NULL when out of memory.
 */
struct ktap_str *ktap_str_temp(struct ktap_exec *x, const char *s, u32 len)
{
	struct ktap_ctx *ctx = x->ctx;
	size_t need = ALIGN(sizeof(struct ktap_str) + len + 1, 8);
	struct ktap_str *str;

	if (len > KTAP_STR_MAX)
		return NULL;
	if (need > KTAP_SCRATCH_SIZE - ctx->scratch_used)
		return ktap_str_intern(x->vm, s, len);
	str = (struct ktap_str *)(ctx->scratch + ctx->scratch_used);
	ctx->scratch_used += need;
	memcpy(str->data, s, len);
	str->data[len] = '\0';
	str->len = len;
	str->hash = ktap_str_hash(x->vm, s, len);
	str->interned = false;
	return str;
}

/**
 * ktap_value_persist - make @v safe to store beyond the current run
 * @vm: the session
 * @v: value, updated in place
 *
 * Temporary strings are interned; events and bound methods, which only
 * exist during one firing, cannot be stored.
 *
 * Return: 0, -ENOMEM, or -EPERM for an event value.
 */
int ktap_value_persist(struct ktap_vm *vm, struct ktap_value *v)
{
	struct ktap_str *s;

	if (unlikely(ktap_is_ephemeral(v)))
		return -EPERM;
	if (v->type != KTAP_TSTR || v->s->interned)
		return 0;
	s = ktap_str_intern(vm, v->s->data, v->s->len);
	if (!s)
		return -ENOMEM;
	v->s = s;
	return 0;
}

/*
 * Tables. Keys are integers, booleans and interned strings; a key is
 * normalised (interned) before the table lock is taken.
 */

static int ktap_key_norm(struct ktap_vm *vm, const struct ktap_value *key,
			 struct ktap_value *out, bool insert)
{
	struct ktap_str *s;

	switch (key->type) {
	case KTAP_TINT:
		ktap_value_int(out, key->i);
		return 0;
	case KTAP_TBOOL:
		ktap_set_bool(out, key->b);
		return 0;
	case KTAP_TSTR:
		if (insert)
			s = ktap_str_intern(vm, key->s->data, key->s->len);
		else
			s = ktap_str_find(vm, key->s);
		if (!s)
			return insert ? -ENOMEM : -ENOENT;
		ktap_set_obj(out, KTAP_TSTR, s);
		return 0;
	case KTAP_TNIL:
		return insert ? -EINVAL : -ENOENT;
	default:
		return -EINVAL;
	}
}

static u32 ktap_key_hash(const struct ktap_value *k)
{
	switch (k->type) {
	case KTAP_TSTR:
		return k->s->hash;
	case KTAP_TBOOL:
		return k->b;
	default:
		return hash_64((u64)k->i, 32);
	}
}

static bool ktap_key_eq(const struct ktap_value *a, const struct ktap_value *b)
{
	if (a->type != b->type)
		return false;
	if (a->type == KTAP_TSTR)
		return a->s == b->s;
	if (a->type == KTAP_TBOOL)
		return a->b == b->b;
	return a->i == b->i;
}

struct ktap_table *ktap_table_new(struct ktap_vm *vm, u32 narr, u32 nhash)
{
	struct ktap_table *t = ktap_alloc(vm, sizeof(*t));

	if (!t)
		return NULL;
	raw_spin_lock_init(&t->lock);
	if (narr) {
		t->arr = ktap_alloc(vm, array_size(narr, sizeof(*t->arr)));
		if (!t->arr)
			return NULL;
		t->acap = narr;
	}
	if (nhash) {
		u32 cap = roundup_pow_of_two(max(nhash + nhash / 3 + 1, 4U));

		t->hash = ktap_alloc(vm, array_size(cap, sizeof(*t->hash)));
		if (!t->hash)
			return NULL;
		t->hcap = cap;
	}
	return t;
}

static struct ktap_node *ktap_hfind(struct ktap_table *t,
				    const struct ktap_value *key)
{
	u32 mask = t->hcap - 1, i, n;
	struct ktap_node *node;

	if (!t->hcap)
		return NULL;
	i = ktap_key_hash(key) & mask;
	for (n = 0; n < t->hcap; n++, i = (i + 1) & mask) {
		node = &t->hash[i];
		if (node->key.type == KTAP_TNIL)
			return NULL;
		if (ktap_key_eq(&node->key, key))
			return node;
	}
	return NULL;
}

/* An empty slot for @key; the caller made sure one exists. */
static struct ktap_node *ktap_hempty(struct ktap_node *hash, u32 hcap,
				     const struct ktap_value *key)
{
	u32 mask = hcap - 1, i = ktap_key_hash(key) & mask;

	while (hash[i].key.type != KTAP_TNIL)
		i = (i + 1) & mask;
	return &hash[i];
}

/* Double the hash part, dropping deleted keys. Called with t->lock. */
static int ktap_rehash(struct ktap_vm *vm, struct ktap_table *t)
{
	u32 cap = t->hcap ? t->hcap * 2 : 4, live = 0, i;
	struct ktap_node *hash, *node;

	for (i = 0; i < t->hcap; i++)
		live += t->hash[i].val.type != KTAP_TNIL;
	/* Mostly deleted keys: rebuilding at the same size is enough. */
	if (live * 2 < t->hcap)
		cap = t->hcap;
	hash = ktap_alloc(vm, array_size(cap, sizeof(*hash)));
	if (!hash)
		return -ENOMEM;
	t->hused = 0;
	for (i = 0; i < t->hcap; i++) {
		if (t->hash[i].val.type == KTAP_TNIL)
			continue;
		node = ktap_hempty(hash, cap, &t->hash[i].key);
		*node = t->hash[i];
		t->hused++;
	}
	t->hash = hash;
	t->hcap = cap;
	return 0;
}

/* Double the array part, moving keys acap+1..new cap out of the hash. */
static int ktap_grow_array(struct ktap_vm *vm, struct ktap_table *t)
{
	u32 cap = t->acap ? t->acap * 2 : 4, k;
	struct ktap_value *arr, key;
	struct ktap_node *node;

	arr = ktap_alloc(vm, array_size(cap, sizeof(*arr)));
	if (!arr)
		return -ENOMEM;
	if (t->acap)
		memcpy(arr, t->arr, t->acap * sizeof(*arr));
	for (k = t->acap + 1; t->hcap && k <= cap; k++) {
		ktap_value_int(&key, k);
		node = ktap_hfind(t, &key);
		if (node && node->val.type != KTAP_TNIL) {
			arr[k - 1] = node->val;
			ktap_set_nil(&node->val);
		}
	}
	t->arr = arr;
	t->acap = cap;
	return 0;
}

/*
 * The value slot for a normalised @key, or NULL if absent and !@insert.
 * Integer keys 1..acap live in the array part; appending acap + 1 grows
 * it. A new hash slot starts out nil. Called with t->lock held.
 */
static struct ktap_value *ktap_tslot(struct ktap_vm *vm, struct ktap_table *t,
				     const struct ktap_value *key, bool insert,
				     int *err)
{
	struct ktap_node *node;

	if (key->type == KTAP_TINT) {
		s64 i = key->i;

		if (i >= 1 && i <= t->acap)
			return &t->arr[i - 1];
		if (insert && i == (s64)t->acap + 1 && t->acap < KTAP_ARRAY_MAX) {
			*err = ktap_grow_array(vm, t);
			return *err ? NULL : &t->arr[i - 1];
		}
	}
	node = ktap_hfind(t, key);
	if (node || !insert)
		return node ? &node->val : NULL;
	if ((t->hused + 1) * 4 > t->hcap * 3) {
		*err = ktap_rehash(vm, t);
		if (*err)
			return NULL;
	}
	node = ktap_hempty(t->hash, t->hcap, key);
	node->key = *key;
	ktap_set_nil(&node->val);
	t->hused++;
	return &node->val;
}

/**
 * ktap_table_get - R := t[key]
 * @vm: the session
 * @t: table
 * @key: any value; a nil or never-interned string key reads nil
 * @out: the value, nil if absent
 *
 * Return: 0, -EINVAL for a key type tables cannot hold, -EBUSY when
 * the table lock is contended in NMI.
 */
int ktap_table_get(struct ktap_vm *vm, struct ktap_table *t,
		   const struct ktap_value *key, struct ktap_value *out)
{
	struct ktap_value k, *slot;
	int err = ktap_key_norm(vm, key, &k, false);

	ktap_set_nil(out);
	if (err)
		return err == -ENOENT ? 0 : err;
	scoped_cond_guard(ktap_spin_try, return -EBUSY, &t->lock) {
		slot = ktap_tslot(vm, t, &k, false, &err);
		if (slot)
			*out = *slot;
	}
	return 0;
}

/**
 * ktap_table_set - t[key] := val; a nil @val deletes the key
 * @vm: the session
 * @t: table
 * @key: integer, boolean or string
 * @val: value; temporary strings are interned first
 *
 * Return: 0, -EINVAL (bad key), -EPERM (event value), -ENOMEM, -EBUSY.
 */
int ktap_table_set(struct ktap_vm *vm, struct ktap_table *t,
		   const struct ktap_value *key, const struct ktap_value *val)
{
	struct ktap_value k, v = *val, *slot;
	bool del = v.type == KTAP_TNIL;
	int err;

	err = ktap_key_norm(vm, key, &k, !del);
	if (err)
		return err == -ENOENT ? 0 : err;
	err = ktap_value_persist(vm, &v);
	if (err)
		return err;
	scoped_cond_guard(ktap_spin_try, return -EBUSY, &t->lock) {
		slot = ktap_tslot(vm, t, &k, !del, &err);
		if (!slot)
			return err;
		if (slot->type == KTAP_TNIL && !del)
			t->count++;
		else if (slot->type != KTAP_TNIL && del)
			t->count--;
		*slot = v;
	}
	return 0;
}

/**
 * ktap_table_inc - t[key] += n as one update under the table lock
 * @vm: the session
 * @t: table
 * @key: integer, boolean or string
 * @n: increment; an absent key counts as 0
 *
 * Return: 0, -EDOM if the present value is not a number, or as
 * ktap_table_set().
 */
int ktap_table_inc(struct ktap_vm *vm, struct ktap_table *t,
		   const struct ktap_value *key, s64 n)
{
	struct ktap_value k, *slot;
	int err;

	err = ktap_key_norm(vm, key, &k, true);
	if (err)
		return err;
	scoped_cond_guard(ktap_spin_try, return -EBUSY, &t->lock) {
		slot = ktap_tslot(vm, t, &k, true, &err);
		if (!slot)
			return err;
		if (slot->type == KTAP_TNIL) {
			ktap_value_int(slot, n);
			t->count++;
		} else if (slot->type == KTAP_TINT) {
			slot->i = (s64)((u64)slot->i + (u64)n);
		} else {
			return -EDOM;
		}
	}
	return 0;
}

/**
 * ktap_table_len - the # operator: a border of the sequence 1..n
 * @vm: the session
 * @t: table
 * @len: result
 *
 * Return: 0 or -EBUSY.
 */
int ktap_table_len(struct ktap_vm *vm, struct ktap_table *t, s64 *len)
{
	struct ktap_value k;
	struct ktap_node *node;
	u32 n = 0;

	scoped_cond_guard(ktap_spin_try, return -EBUSY, &t->lock) {
		while (n < t->acap && t->arr[n].type != KTAP_TNIL)
			n++;
		while (n >= t->acap) {
			ktap_value_int(&k, (s64)n + 1);
			node = ktap_hfind(t, &k);
			if (!node || node->val.type == KTAP_TNIL)
				break;
			n++;
		}
	}
	*len = n;
	return 0;
}

int ktap_table_count(struct ktap_table *t, s64 *count)
{
	*count = READ_ONCE(t->count);
	return 0;
}

int ktap_table_clear(struct ktap_table *t)
{
	scoped_cond_guard(ktap_spin_try, return -EBUSY, &t->lock) {
		if (t->acap)
			memset(t->arr, 0, t->acap * sizeof(*t->arr));
		if (t->hcap)
			memset(t->hash, 0, t->hcap * sizeof(*t->hash));
		t->hused = 0;
		t->count = 0;
	}
	return 0;
}

/* Copy the live entries of @t into @it (capacity @cap). Under t->lock. */
static void ktap_table_collect(struct ktap_table *t, struct ktap_iter *it,
			       u32 cap)
{
	u32 i;

	for (i = 0; i < t->acap && it->n < cap; i++) {
		if (t->arr[i].type == KTAP_TNIL)
			continue;
		ktap_value_int(&it->e[it->n].key, (s64)i + 1);
		it->e[it->n++].val = t->arr[i];
	}
	for (i = 0; i < t->hcap && it->n < cap; i++) {
		if (t->hash[i].val.type == KTAP_TNIL)
			continue;
		it->e[it->n++] = t->hash[i];
	}
}

/**
 * ktap_table_iter - snapshot the entries of @t for pairs()
 * @vm: the session
 * @t: table
 * @err: set on failure
 *
 * The snapshot is allocated from the pool (it is not reclaimed before
 * the session ends), so later changes to @t do not affect iteration.
 *
 * Return: the iterator, or NULL with @err set.
 */
struct ktap_iter *ktap_table_iter(struct ktap_vm *vm, struct ktap_table *t,
				  int *err)
{
	struct ktap_iter *it = NULL;
	u32 cap;

	scoped_cond_guard(ktap_spin_try, *err = -EBUSY; return NULL, &t->lock) {
		cap = t->count;
		it = ktap_alloc(vm, struct_size(it, e, cap));
		if (!it) {
			*err = -ENOMEM;
			return NULL;
		}
		ktap_table_collect(t, it, cap);
	}
	return it;
}

/* ptable: per-CPU statistics. */

struct ktap_ptable *ktap_ptable_new(struct ktap_vm *vm)
{
	struct ktap_ptable *pt;
	int cpu;

	pt = ktap_alloc(vm, struct_size(pt, cpu, nr_cpu_ids));
	if (!pt)
		return NULL;
	pt->ncpu = nr_cpu_ids;
	for_each_possible_cpu(cpu) {
		pt->cpu[cpu] = ktap_table_new(vm, 0, 4);
		if (!pt->cpu[cpu])
			return NULL;
	}
	return pt;
}

static void ktap_stat_add(struct ktap_stat *st, s64 v)
{
	if (!st->count || v < st->min)
		st->min = v;
	if (!st->count || v > st->max)
		st->max = v;
	st->count++;
	st->sum = (s64)((u64)st->sum + (u64)v);
}

static void ktap_stat_merge(struct ktap_stat *dst, const struct ktap_stat *src)
{
	if (!src->count)
		return;
	if (!dst->count || src->min < dst->min)
		dst->min = src->min;
	if (!dst->count || src->max > dst->max)
		dst->max = src->max;
	dst->count += src->count;
	dst->sum = (s64)((u64)dst->sum + (u64)src->sum);
}

/**
 * ktap_ptable_add - s[key] <<< v on this CPU's part of @pt
 * @vm: the session
 * @pt: ptable
 * @key: integer, boolean or string
 * @v: sample
 *
 * Only the current CPU's table is touched, so its lock is uncontended
 * except against readers.
 *
 * Return: 0, -EINVAL, -ENOMEM or -EBUSY.
 */
int ktap_ptable_add(struct ktap_vm *vm, struct ktap_ptable *pt,
		    const struct ktap_value *key, s64 v)
{
	struct ktap_table *t = pt->cpu[raw_smp_processor_id()];
	struct ktap_value k, *slot;
	struct ktap_stat *st;
	int err;

	err = ktap_key_norm(vm, key, &k, true);
	if (err)
		return err;
	scoped_cond_guard(ktap_spin_try, return -EBUSY, &t->lock) {
		slot = ktap_tslot(vm, t, &k, true, &err);
		if (!slot)
			return err;
		if (slot->type == KTAP_TNIL) {
			st = ktap_alloc(vm, sizeof(*st));
			if (!st)
				return -ENOMEM;
			ktap_set_obj(slot, KTAP_TSTAT, st);
			t->count++;
		}
		ktap_stat_add(slot->p, v);
	}
	return 0;
}

/**
 * ktap_ptable_get - s[key]: the aggregate of @key over all CPUs
 * @vm: the session
 * @pt: ptable
 * @key: any value
 * @out: a statistic value (a fresh pool copy), or nil if never added
 *
 * Return: 0, -EINVAL, -ENOMEM or -EBUSY.
 */
int ktap_ptable_get(struct ktap_vm *vm, struct ktap_ptable *pt,
		    const struct ktap_value *key, struct ktap_value *out)
{
	struct ktap_stat agg = {}, *st;
	struct ktap_value k, *slot;
	int err, cpu;

	ktap_set_nil(out);
	err = ktap_key_norm(vm, key, &k, false);
	if (err)
		return err == -ENOENT ? 0 : err;
	for_each_possible_cpu(cpu) {
		struct ktap_table *t = pt->cpu[cpu];

		scoped_cond_guard(ktap_spin_try, return -EBUSY, &t->lock) {
			slot = ktap_tslot(vm, t, &k, false, &err);
			if (slot && slot->type == KTAP_TSTAT)
				ktap_stat_merge(&agg, slot->p);
		}
	}
	if (!agg.count)
		return 0;
	st = ktap_alloc(vm, sizeof(*st));
	if (!st)
		return -ENOMEM;
	*st = agg;
	ktap_set_obj(out, KTAP_TSTAT, st);
	return 0;
}

/**
 * ktap_ptable_iter - snapshot of @pt aggregated over CPUs, for pairs()
 * @vm: the session
 * @pt: ptable
 * @err: set on failure
 *
 * Return: an iterator whose values are statistics, or NULL.
 */
struct ktap_iter *ktap_ptable_iter(struct ktap_vm *vm, struct ktap_ptable *pt,
				   int *err)
{
	struct ktap_table *agg = ktap_table_new(vm, 0, 16);
	struct ktap_value *slot;
	struct ktap_stat *st;
	struct ktap_iter *it;
	int cpu;
	u32 i;

	*err = -ENOMEM;
	if (!agg)
		return NULL;
	for_each_possible_cpu(cpu) {
		struct ktap_table *t = pt->cpu[cpu];

		/* @agg is private to this call: it needs no lock. */
		scoped_cond_guard(ktap_spin_try, *err = -EBUSY; return NULL,
				  &t->lock) {
			for (i = 0; i < t->hcap; i++) {
				struct ktap_node *n = &t->hash[i];

				if (n->val.type != KTAP_TSTAT)
					continue;
				slot = ktap_tslot(vm, agg, &n->key, true, err);
				if (!slot)
					return NULL;
				if (slot->type == KTAP_TNIL) {
					st = ktap_alloc(vm, sizeof(*st));
					if (!st)
						return NULL;
					ktap_set_obj(slot, KTAP_TSTAT, st);
					agg->count++;
				}
				ktap_stat_merge(slot->p, n->val.p);
			}
			for (i = 0; i < t->acap; i++) {
				struct ktap_value key;

				if (t->arr[i].type != KTAP_TSTAT)
					continue;
				ktap_value_int(&key, (s64)i + 1);
				slot = ktap_tslot(vm, agg, &key, true, err);
				if (!slot)
					return NULL;
				if (slot->type == KTAP_TNIL) {
					st = ktap_alloc(vm, sizeof(*st));
					if (!st)
						return NULL;
					ktap_set_obj(slot, KTAP_TSTAT, st);
					agg->count++;
				}
				ktap_stat_merge(slot->p, t->arr[i].p);
			}
		}
	}
	it = ktap_alloc(vm, struct_size(it, e, agg->count));
	if (!it)
		return NULL;
	ktap_table_collect(agg, it, agg->count);
	*err = 0;
	return it;
}

/* Order for sort_pairs() and histograms: by value descending, then key. */
static int ktap_value_rank(const struct ktap_value *v, s64 *n)
{
	if (v->type == KTAP_TINT) {
		*n = v->i;
		return 1;
	}
	if (v->type == KTAP_TSTAT) {
		*n = ((struct ktap_stat *)v->p)->count;
		return 1;
	}
	return 0;
}

static int ktap_key_cmp(const struct ktap_value *a, const struct ktap_value *b)
{
	if (a->type != b->type)
		return a->type < b->type ? -1 : 1;
	if (a->type == KTAP_TSTR) {
		int r = memcmp(a->s->data, b->s->data, min(a->s->len, b->s->len));

		if (r)
			return r;
		return a->s->len < b->s->len ? -1 : a->s->len > b->s->len;
	}
	if (a->type == KTAP_TBOOL)
		return (int)a->b - (int)b->b;
	return a->i < b->i ? -1 : a->i > b->i;
}

static int ktap_node_cmp(const void *pa, const void *pb)
{
	const struct ktap_node *a = pa, *b = pb;
	s64 x = 0, y = 0;
	int ra = ktap_value_rank(&a->val, &x), rb = ktap_value_rank(&b->val, &y);

	if (ra != rb)
		return rb - ra;
	if (x != y)
		return x > y ? -1 : 1;
	return ktap_key_cmp(&a->key, &b->key);
}

/**
 * ktap_iter_sort - order an iterator's snapshot for sort_pairs()
 * @it: iterator, not yet advanced
 *
 * Numbers (and statistics, by count) descending, ties by key ascending,
 * non-numeric values last. Uses lib/sort.c: no allocation, no recursion.
 */
void ktap_iter_sort(struct ktap_iter *it)
{
	sort(it->e, it->n, sizeof(it->e[0]), ktap_node_cmp, NULL);
}

/* Globals and closed upvalues shared by all CPUs. */

void ktap_shared_read(struct ktap_vm *vm, const struct ktap_value *slot,
		      struct ktap_value *out)
{
	unsigned int seq;

	do {
		seq = raw_read_seqcount_begin(&vm->shared_seq);
		*out = *slot;
	} while (read_seqcount_retry(&vm->shared_seq, seq));
}

int ktap_shared_write(struct ktap_vm *vm, struct ktap_value *slot,
		      const struct ktap_value *v)
{
	struct ktap_value val = *v;
	int err = ktap_value_persist(vm, &val);

	if (err)
		return err;
	scoped_cond_guard(ktap_spin_try, return -EBUSY, &vm->shared_lock) {
		raw_write_seqcount_begin(&vm->shared_seq);
		*slot = val;
		raw_write_seqcount_end(&vm->shared_seq);
	}
	return 0;
}
