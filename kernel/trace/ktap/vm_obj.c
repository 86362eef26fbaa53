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
 * A handler firing allocates its short-lived objects from its CPU's
 * temporary arena instead (ktap_run_alloc()): only the firing running on
 * that CPU uses it, and the next firing starts it afresh. A table whose
 * header is in an arena keeps all its parts there.
 *
 * Locking: strings are interned lock-free (cmpxchg into an insert-only
 * open-addressing set). Table reads and `+=` on an existing integer are
 * lock-free (see struct ktap_table): counting on every CPU shares no
 * lock. Writers that add keys, delete, change a value's type or grow
 * the table take the table's raw spinlock (the ktap_spin_try guard:
 * trylock in NMI, which reports -EBUSY so the caller counts a drop).
 * No operation holds two table locks at once. ptables update only the
 * current CPU's part, under that part's (uncontended) lock.
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
	/* charged to the loader's memcg, like everything a session holds */
	pool->base = __vmalloc(size, GFP_KERNEL_ACCOUNT | __GFP_ZERO);
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

/**
 * ktap_temp_alloc - allocate zeroed memory from this CPU's temporary arena
 * @vm: the session
 * @size: bytes wanted
 *
 * Only the run on this CPU (there is at most one: see ktap_vm_fire())
 * allocates here, so no atomics are needed.
 *
 * Return: 8-byte aligned memory valid until the next firing on this CPU,
 * or NULL when the arena is full.
 */
void *ktap_temp_alloc(struct ktap_vm *vm, size_t size)
{
	int cpu = raw_smp_processor_id();
	struct ktap_ctx *ctx = vm->cpu_ctx[cpu];
	char *p;

	size = ALIGN(size, 8);
	if (!vm->temp || size > vm->temp_size - ctx->temp_used)
		return NULL;
	p = vm->temp + (size_t)cpu * vm->temp_size + ctx->temp_used;
	ctx->temp_used += size;
	memset(p, 0, size);
	return p;
}

/**
 * ktap_run_alloc - allocate an object that may die with the current run
 * @x: the run
 * @size: bytes wanted
 *
 * Return: memory from the temporary arena in a handler firing, from the
 * pool in the main chunk and END handlers; NULL when that is full.
 */
void *ktap_run_alloc(struct ktap_exec *x, size_t size)
{
	return x->transient ? ktap_temp_alloc(x->vm, size) :
			      ktap_alloc(x->vm, size);
}

/* Strings. */

int ktap_strset_init(struct ktap_strset *set, size_t mem_limit)
{
	size_t n = clamp_t(size_t, mem_limit / 128, 1024, 1U << 20);

	n = roundup_pow_of_two(n);
	set->slots = kvcalloc(n, sizeof(*set->slots), GFP_KERNEL_ACCOUNT);
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
 * __ktap_str_intern - the unique pool copy of a string
 * @vm: the session
 * @s: bytes
 * @len: length of @s
 * @hash: ktap_str_hash() of @s
 *
 * Lock-free: a new string is published with cmpxchg into an empty slot
 * of the insert-only set; a racing insert of the same bytes makes the
 * loser use the winner's copy (its own allocation is abandoned).
 *
 * Return: the interned string, or NULL when the pool or the set is full.
 */
static struct ktap_str *__ktap_str_intern(struct ktap_vm *vm, const char *s,
					  u32 len, u32 hash)
{
	struct ktap_strset *set = &vm->strs;
	struct ktap_str *fresh = NULL, *cur;
	u32 idx = hash & set->mask, n;

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

struct ktap_str *ktap_str_intern(struct ktap_vm *vm, const char *s, u32 len)
{
	if (len > KTAP_STR_MAX)
		return NULL;
	return __ktap_str_intern(vm, s, len, ktap_str_hash(vm, s, len));
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
 * In a handler firing, taken from the CPU's temporary arena so that
 * formatting event text does not consume the session pool; it is
 * interned if the script stores it. Elsewhere it is interned at once.
 *
 * Return: the string, or NULL when out of memory.
 */
struct ktap_str *ktap_str_temp(struct ktap_exec *x, const char *s, u32 len)
{
	struct ktap_str *str;

	if (len > KTAP_STR_MAX)
		return NULL;
	if (!x->transient)
		return ktap_str_intern(x->vm, s, len);
	str = ktap_temp_alloc(x->vm, sizeof(*str) + len + 1);
	if (!str)
		return NULL;
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
 * Temporary strings are interned and temporary statistics copied to the
 * pool; events and bound methods, which only exist during one firing,
 * and the tables, closures and iterators a firing created in its arena
 * cannot be stored.
 *
 * Return: 0, -ENOMEM, -EPERM for an event value, -EXDEV for an object
 * of a firing's arena.
 */
int ktap_value_persist(struct ktap_vm *vm, struct ktap_value *v)
{
	struct ktap_stat *st;
	struct ktap_str *s;

	if (unlikely(ktap_is_ephemeral(v)))
		return -EPERM;
	switch (v->type) {
	case KTAP_TSTR:
		break;
	case KTAP_TSTAT:
		if (!ktap_is_temp(vm, v->p))
			return 0;
		st = ktap_alloc(vm, sizeof(*st));
		if (!st)
			return -ENOMEM;
		*st = *(struct ktap_stat *)v->p;
		v->p = st;
		return 0;
	case KTAP_TTABLE:
	case KTAP_TFUNC:
	case KTAP_TITER:
		return ktap_is_temp(vm, v->p) ? -EXDEV : 0;
	default:
		return 0;
	}
	if (v->s->interned)
		return 0;
	s = __ktap_str_intern(vm, v->s->data, v->s->len, v->s->hash);
	if (!s)
		return -ENOMEM;
	v->s = s;
	return 0;
}

/*
 * Tables. Keys are integers, booleans and interned strings; a key is
 * normalised (interned) before the table lock is taken.
 */

static int ktap_key_norm_slow(struct ktap_vm *vm,
			      const struct ktap_value *key,
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
		if (insert && !key->s->interned)
			s = __ktap_str_intern(vm, key->s->data, key->s->len,
					      key->s->hash);
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

static __always_inline int ktap_key_norm(struct ktap_vm *vm,
					 const struct ktap_value *key,
					 struct ktap_value *out, bool insert)
{
	/* the common key, checked before any call: execname, a constant */
	if (likely(key->type == KTAP_TSTR && key->s->interned)) {
		*out = *key;
		return 0;
	}
	return ktap_key_norm_slow(vm, key, out, insert);
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

static bool ktap_key_eq(u32 type, const struct ktap_value *a,
			const struct ktap_value *b)
{
	if (type != b->type)
		return false;
	if (type == KTAP_TSTR)
		return READ_ONCE(a->s) == b->s;
	if (type == KTAP_TBOOL)
		return READ_ONCE(a->b) == b->b;
	return READ_ONCE(a->i) == b->i;
}

/* Read a cell: its type is immutable, its payload one 8-byte load. */
static void ktap_cell_read(const struct ktap_value *cell,
			   struct ktap_value *out)
{
	if (!cell) {
		ktap_set_nil(out);
		return;
	}
	out->type = cell->type;
	out->i = READ_ONCE(cell->i);
}

/* Memory for a part of @t: from @t's own arena (pool or temporary). */
static void *ktap_table_alloc(struct ktap_vm *vm, const struct ktap_table *t,
			      size_t size)
{
	return ktap_is_temp(vm, t) ? ktap_temp_alloc(vm, size) :
				     ktap_alloc(vm, size);
}

static struct ktap_value *ktap_cell_new(struct ktap_vm *vm,
					const struct ktap_table *t,
					const struct ktap_value *v)
{
	struct ktap_value *cell = ktap_table_alloc(vm, t, sizeof(*cell));

	if (cell)
		*cell = *v;
	return cell;
}

static struct ktap_hpart *ktap_hpart_new(struct ktap_vm *vm,
					 const struct ktap_table *t, u32 cap)
{
	struct ktap_hpart *h = ktap_table_alloc(vm, t, struct_size(h, n, cap));

	if (h)
		h->cap = cap;
	return h;
}

static struct ktap_table *ktap_table_init(struct ktap_vm *vm,
					  struct ktap_table *t, u32 narr,
					  u32 nhash)
{
	if (!t)
		return NULL;
	raw_spin_lock_init(&t->lock);
	if (narr) {
		t->arr = ktap_table_alloc(vm, t, struct_size(t->arr, cell, narr));
		if (!t->arr)
			return NULL;
		t->arr->cap = narr;
	}
	if (nhash) {
		u32 cap = roundup_pow_of_two(max(nhash + nhash / 3 + 1, 4U));

		t->hash = ktap_hpart_new(vm, t, cap);
		if (!t->hash)
			return NULL;
	}
	return t;
}

struct ktap_table *ktap_table_new(struct ktap_vm *vm, u32 narr, u32 nhash)
{
	return ktap_table_init(vm, ktap_alloc(vm, sizeof(struct ktap_table)),
			       narr, nhash);
}

/**
 * ktap_table_new_temp - a table that lives in this CPU's temporary arena
 * @vm: the session
 * @narr: array part size hint
 * @nhash: hash part size hint
 *
 * For the tables a handler firing creates: it cannot be stored beyond
 * the firing (ktap_value_persist() refuses it).
 *
 * Return: the table, or NULL when the arena is full.
 */
struct ktap_table *ktap_table_new_temp(struct ktap_vm *vm, u32 narr,
				       u32 nhash)
{
	return ktap_table_init(vm,
			       ktap_temp_alloc(vm, sizeof(struct ktap_table)),
			       narr, nhash);
}

/* Lock-free lookup in hash part @h: the node of @key, or NULL. */
static struct ktap_node *ktap_hfind(struct ktap_hpart *h,
				    const struct ktap_value *key)
{
	u32 mask, i, n, type;

	if (!h)
		return NULL;
	mask = h->cap - 1;
	i = ktap_key_hash(key) & mask;
	for (n = 0; n < h->cap; n++, i = (i + 1) & mask) {
		struct ktap_node *node = &h->n[i];

		/* pairs with the release in ktap_hclaim(): key is complete */
		type = smp_load_acquire(&node->key.type);
		if (type == KTAP_TNIL)
			return NULL;
		if (ktap_key_eq(type, &node->key, key))
			return node;
	}
	return NULL;
}

/*
 * Lock-free: where the cell pointer of a normalised @key lives, or NULL
 * if the key has no slot in the parts seen now.
 */
static struct ktap_value **ktap_cellp(struct ktap_table *t,
				      const struct ktap_value *key)
{
	struct ktap_apart *a;
	struct ktap_node *node;

	/* pairs with the releases publishing parts: see their contents */
	a = smp_load_acquire(&t->arr);
	if (key->type == KTAP_TINT && a && key->i >= 1 && key->i <= a->cap)
		return &a->cell[key->i - 1];
	/* as above, for the hash part */
	node = ktap_hfind(smp_load_acquire(&t->hash), key);
	return node ? &node->cell : NULL;
}

/* Claim an empty node for @key in @h; the caller made sure one exists. */
static struct ktap_node *ktap_hclaim(struct ktap_hpart *h,
				     const struct ktap_value *key,
				     struct ktap_value *cell)
{
	u32 mask = h->cap - 1, i = ktap_key_hash(key) & mask;
	struct ktap_node *node;

	while (h->n[i].key.type != KTAP_TNIL)
		i = (i + 1) & mask;
	node = &h->n[i];
	node->cell = cell;
	node->key.i = key->i;
	if (key->type == KTAP_TSTR)
		node->key.s = key->s;
	/* publish the key last: lock-free readers match on its type */
	smp_store_release(&node->key.type, key->type);
	h->used++;
	return node;
}

/* Double the hash part, dropping deleted keys. Called with t->lock. */
static int ktap_rehash(struct ktap_vm *vm, struct ktap_table *t)
{
	struct ktap_hpart *old = t->hash, *h;
	u32 cap = old ? old->cap * 2 : 4, live = 0, i;

	for (i = 0; old && i < old->cap; i++)
		live += !!old->n[i].cell;
	/* Mostly deleted keys: rebuilding at the same size is enough. */
	if (old && live * 2 < old->cap)
		cap = old->cap;
	h = ktap_hpart_new(vm, t, cap);
	if (!h)
		return -ENOMEM;
	for (i = 0; old && i < old->cap; i++)
		if (old->n[i].cell)
			ktap_hclaim(h, &old->n[i].key, old->n[i].cell);
	/* publish the filled part; pairs with ktap_cellp() */
	smp_store_release(&t->hash, h);
	return 0;
}

/*
 * Double the array part and move keys old cap+1..new cap out of the
 * hash part. The new part is published before the hash slots are
 * emptied, so a lock-free reader always finds the (shared) cell.
 */
static int ktap_grow_array(struct ktap_vm *vm, struct ktap_table *t)
{
	struct ktap_apart *old = t->arr, *a;
	u32 ocap = old ? old->cap : 0, cap = ocap ? ocap * 2 : 4, k;
	struct ktap_value key;
	struct ktap_node *node;

	a = ktap_table_alloc(vm, t, struct_size(a, cell, cap));
	if (!a)
		return -ENOMEM;
	a->cap = cap;
	if (ocap)
		memcpy(a->cell, old->cell, ocap * sizeof(a->cell[0]));
	for (k = ocap + 1; t->hash && k <= cap; k++) {
		ktap_value_int(&key, k);
		node = ktap_hfind(t->hash, &key);
		if (node)
			a->cell[k - 1] = node->cell;
	}
	/* publish the filled part before emptying the hash slots */
	smp_store_release(&t->arr, a);
	for (k = ocap + 1; t->hash && k <= cap; k++) {
		ktap_value_int(&key, k);
		node = ktap_hfind(t->hash, &key);
		if (node)
			WRITE_ONCE(node->cell, NULL);
	}
	return 0;
}

/*
 * The cell pointer slot of a normalised @key, created (with a NULL
 * cell) if absent and @insert. Integer keys 1..cap live in the array
 * part; appending cap + 1 grows it. Called with t->lock held.
 */
static struct ktap_value **ktap_tslot(struct ktap_vm *vm, struct ktap_table *t,
				      const struct ktap_value *key, bool insert,
				      int *err)
{
	struct ktap_value **slot = ktap_cellp(t, key);
	u32 acap = t->arr ? t->arr->cap : 0;

	if (slot || !insert)
		return slot;
	if (key->type == KTAP_TINT && key->i == (s64)acap + 1 &&
	    acap < KTAP_ARRAY_MAX) {
		*err = ktap_grow_array(vm, t);
		return *err ? NULL : &t->arr->cell[key->i - 1];
	}
	if (!t->hash || (t->hash->used + 1) * 4 > t->hash->cap * 3) {
		*err = ktap_rehash(vm, t);
		if (*err)
			return NULL;
	}
	return &ktap_hclaim(t->hash, key, NULL)->cell;
}

/**
 * ktap_table_get - R := t[key], without a lock
 * @vm: the session
 * @t: table
 * @key: any value; a nil or never-interned string key reads nil
 * @out: the value, nil if absent
 *
 * Return: 0, or -EINVAL for a key type tables cannot hold.
 */
int ktap_table_get(struct ktap_vm *vm, struct ktap_table *t,
		   const struct ktap_value *key, struct ktap_value *out)
{
	struct ktap_value k, **slot;
	int err = ktap_key_norm(vm, key, &k, false);

	ktap_set_nil(out);
	if (err)
		return err == -ENOENT ? 0 : err;
	slot = ktap_cellp(t, &k);
	if (slot)
		/* pairs with ktap_cell_store(): see the cell's contents */
		ktap_cell_read(smp_load_acquire(slot), out);
	return 0;
}

/* Store @v (persistent) in the cell at @slot. Called with t->lock. */
static int ktap_cell_store(struct ktap_vm *vm, struct ktap_table *t,
			   struct ktap_value **slot, const struct ktap_value *v)
{
	struct ktap_value *cell = *slot, *fresh;

	if (v->type == KTAP_TNIL) {
		if (cell) {
			WRITE_ONCE(*slot, NULL);
			t->count--;
		}
		return 0;
	}
	if (IS_ENABLED(CONFIG_64BIT) && cell && cell->type == v->type) {
		WRITE_ONCE(cell->i, v->i);
		return 0;
	}
	fresh = ktap_cell_new(vm, t, v);
	if (!fresh)
		return -ENOMEM;
	if (!cell)
		t->count++;
	/* publish the initialised cell; pairs with the readers' acquire */
	smp_store_release(slot, fresh);
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
	struct ktap_value k, v = *val, **slot;
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
		return ktap_cell_store(vm, t, slot, &v);
	}
	return 0;
}

/* t[key] += n on an integer cell: one atomic add, no lock. */
static bool ktap_cell_add(struct ktap_value *cell, s64 n)
{
	if (!IS_ENABLED(CONFIG_64BIT) || !cell || cell->type != KTAP_TINT)
		return false;
	atomic64_add(n, (atomic64_t *)&cell->i);
	return true;
}

/**
 * ktap_table_inc - t[key] += n as one atomic update
 * @vm: the session
 * @t: table
 * @key: integer, boolean or string
 * @n: increment; an absent key counts as 0
 *
 * An existing integer is updated with one atomic add and no lock, so
 * counting from every CPU shares no lock; a new key takes the lock.
 *
 * Return: 0, -EDOM if the present value is not a number, or as
 * ktap_table_set().
 */
int ktap_table_inc(struct ktap_vm *vm, struct ktap_table *t,
		   const struct ktap_value *key, s64 n)
{
	struct ktap_value k, v, **slot;
	int err;

	err = ktap_key_norm(vm, key, &k, true);
	if (err)
		return err;
	slot = ktap_cellp(t, &k);
	/* pairs with ktap_cell_store(): the cell's type is set */
	if (slot && ktap_cell_add(smp_load_acquire(slot), n))
		return 0;
	scoped_cond_guard(ktap_spin_try, return -EBUSY, &t->lock) {
		slot = ktap_tslot(vm, t, &k, true, &err);
		if (!slot)
			return err;
		if (ktap_cell_add(*slot, n))
			return 0;
		if (*slot && (*slot)->type != KTAP_TINT)
			return -EDOM;
		if (*slot)	/* 32-bit: no lock-free add */
			n = (s64)((u64)(*slot)->i + (u64)n);
		ktap_value_int(&v, n);
		return ktap_cell_store(vm, t, slot, &v);
	}
	return 0;
}

/**
 * ktap_table_len - the # operator: a border of the sequence 1..n
 * @vm: the session
 * @t: table
 * @len: result
 * @max: most keys the walk may look at (the caller's budget)
 *
 * Return: 0, or -E2BIG when the border lies beyond @max.
 */
int ktap_table_len(struct ktap_vm *vm, struct ktap_table *t, s64 *len,
		   s64 max)
{
	struct ktap_value k, **slot;
	s64 n = 0;

	for (;;) {
		if (n >= max)
			return -E2BIG;
		ktap_value_int(&k, n + 1);
		slot = ktap_cellp(t, &k);
		/* pairs with ktap_cell_store() */
		if (!slot || !smp_load_acquire(slot))
			break;
		n++;
	}
	*len = n;
	return 0;
}

int ktap_table_count(struct ktap_table *t, s64 *count)
{
	*count = READ_ONCE(t->count);
	return 0;
}

/* Empty @t by publishing empty parts; readers may still see the old. */
int ktap_table_clear(struct ktap_table *t)
{
	scoped_cond_guard(ktap_spin_try, return -EBUSY, &t->lock) {
		/* readers holding the old parts still see valid memory */
		smp_store_release(&t->arr, NULL);
		/* likewise */
		smp_store_release(&t->hash, NULL);
		t->count = 0;
	}
	return 0;
}

/* Copy the live entries of @t into @it (capacity @cap). Under t->lock. */
static void ktap_table_collect(struct ktap_table *t, struct ktap_iter *it,
			       u32 cap)
{
	u32 i;

	for (i = 0; t->arr && i < t->arr->cap && it->n < cap; i++) {
		if (!t->arr->cell[i])
			continue;
		ktap_value_int(&it->e[it->n].key, (s64)i + 1);
		ktap_cell_read(t->arr->cell[i], &it->e[it->n++].val);
	}
	for (i = 0; t->hash && i < t->hash->cap && it->n < cap; i++) {
		struct ktap_node *node = &t->hash->n[i];

		if (!node->cell)
			continue;
		it->e[it->n].key = node->key;
		ktap_cell_read(node->cell, &it->e[it->n++].val);
	}
}

/* Elements a walk of @t's parts touches. Under t->lock. */
static u64 ktap_table_span(const struct ktap_table *t)
{
	return (u64)(t->arr ? t->arr->cap : 0) + (t->hash ? t->hash->cap : 0);
}

/**
 * ktap_table_iter - snapshot the entries of @t for pairs()
 * @x: the run; the walk is charged to its budget
 * @t: table
 * @err: set on failure
 *
 * The snapshot comes from ktap_run_alloc(): in a handler firing it dies
 * with the firing. Later changes to @t do not affect iteration.
 *
 * Return: the iterator, or NULL with @err set (a runtime error already
 * recorded for a budget overrun, else an errno for ktap_obj_error()).
 */
struct ktap_iter *ktap_table_iter(struct ktap_exec *x, struct ktap_table *t,
				  int *err)
{
	struct ktap_iter *it = NULL;
	u32 cap;

	scoped_cond_guard(ktap_spin_try, *err = -EBUSY; return NULL, &t->lock) {
		*err = ktap_charge(x, ktap_table_span(t));
		if (*err)
			return NULL;
		cap = t->count;
		it = ktap_run_alloc(x, struct_size(it, e, cap));
		if (!it) {
			*err = -ENOMEM;
			return NULL;
		}
		ktap_table_collect(t, it, cap);
	}
	return it;
}

/* ptable: per-CPU statistics, and the histograms built on them. */

/**
 * ktap_ptable_new - an aggregation
 * @vm: the session
 * @kind: enum ktap_agg_kind
 * @lo: KTAP_AGG_LINEAR: the lowest value of the first regular bucket
 * @hi: KTAP_AGG_LINEAR: values from here on go to the last bucket
 * @step: KTAP_AGG_LINEAR: width of a regular bucket
 *
 * Return: the aggregation, ERR_PTR(-EINVAL) for linear bounds that do
 * not make between 1 and KTAP_LHIST_BUCKETS_MAX - 2 buckets, or
 * ERR_PTR(-ENOMEM).
 */
struct ktap_ptable *ktap_ptable_new(struct ktap_vm *vm, u32 kind, s64 lo,
				    s64 hi, s64 step)
{
	struct ktap_ptable *pt;
	u32 nbuckets = 0;
	u64 span;
	int cpu;

	if (kind == KTAP_AGG_LOG2) {
		nbuckets = KTAP_LOG2_BUCKETS;
	} else if (kind == KTAP_AGG_LINEAR) {
		if (step <= 0 || hi <= lo)
			return ERR_PTR(-EINVAL);
		span = (u64)hi - (u64)lo;
		span = div64_u64(span, step) + !!(span % (u64)step);
		if (span > KTAP_LHIST_BUCKETS_MAX - 2)
			return ERR_PTR(-EINVAL);
		nbuckets = span + 2;
	}
	pt = ktap_alloc(vm, struct_size(pt, cpu, nr_cpu_ids));
	if (!pt)
		return ERR_PTR(-ENOMEM);
	pt->kind = kind;
	pt->nbuckets = nbuckets;
	pt->lo = lo;
	pt->step = step;
	pt->label = NULL;
	pt->ncpu = nr_cpu_ids;
	for_each_possible_cpu(cpu) {
		pt->cpu[cpu] = ktap_table_new(vm, 0, 4);
		if (!pt->cpu[cpu])
			return ERR_PTR(-ENOMEM);
	}
	return pt;
}

/**
 * ktap_agg_bucket - the bucket of @v in a hist() or lhist()
 * @pt: the aggregation (not KTAP_AGG_STATS)
 * @v: a value
 *
 * Return: an index below @pt->nbuckets.
 */
u32 ktap_agg_bucket(const struct ktap_ptable *pt, s64 v)
{
	u64 i;

	if (pt->kind == KTAP_AGG_LOG2)
		return v < 0 ? 0 : v == 0 ? 1 : ilog2((u64)v) + 2;
	if (v < pt->lo)
		return 0;
	i = div64_u64((u64)v - (u64)pt->lo, pt->step) + 1;
	return min_t(u64, i, pt->nbuckets - 1);
}

/* The statistic cell of @key in @t, created if absent. Under t->lock. */
static struct ktap_value **ktap_stat_slot(struct ktap_vm *vm,
					  const struct ktap_ptable *pt,
					  struct ktap_table *t,
					  const struct ktap_value *key, int *err)
{
	struct ktap_value **slot = ktap_tslot(vm, t, key, true, err);
	struct ktap_agg_cell *cell;
	struct ktap_value v;

	if (!slot || *slot)
		return slot;
	cell = ktap_alloc(vm, struct_size(cell, bucket, pt->nbuckets));
	if (!cell) {
		*err = -ENOMEM;
		return NULL;
	}
	ktap_set_obj(&v, KTAP_TSTAT, cell);
	*err = ktap_cell_store(vm, t, slot, &v);
	return *err ? NULL : slot;
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
 * @pt: the aggregation
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
	struct ktap_value k, **slot;
	struct ktap_agg_cell *cell;
	int err;

	err = ktap_key_norm(vm, key, &k, true);
	if (err)
		return err;
	scoped_cond_guard(ktap_spin_try, return -EBUSY, &t->lock) {
		slot = ktap_stat_slot(vm, pt, t, &k, &err);
		if (!slot)
			return err;
		cell = (*slot)->p;
		ktap_stat_add(&cell->st, v);
		if (pt->nbuckets)
			cell->bucket[ktap_agg_bucket(pt, v)]++;
	}
	return 0;
}

/**
 * ktap_ptable_buckets - the buckets of @key summed over all CPUs
 * @x: the run; the work is charged to its budget
 * @pt: a hist() or lhist()
 * @key: a key as the aggregation's iterator returns it
 * @bucket: @pt->nbuckets counters, overwritten
 *
 * Return: 0, -EBUSY or the budget's error.
 */
int ktap_ptable_buckets(struct ktap_exec *x, struct ktap_ptable *pt,
			const struct ktap_value *key, u64 *bucket)
{
	struct ktap_value k, **slot;
	int err, cpu;
	u32 i;

	memset(bucket, 0, pt->nbuckets * sizeof(*bucket));
	err = ktap_key_norm(x->vm, key, &k, false);
	if (err)
		return err == -ENOENT ? 0 : err;
	err = ktap_charge(x, (u64)pt->ncpu * (pt->nbuckets + 1));
	if (err)
		return err;
	for_each_possible_cpu(cpu) {
		struct ktap_table *t = pt->cpu[cpu];
		const struct ktap_agg_cell *cell;

		scoped_cond_guard(ktap_spin_try, return -EBUSY, &t->lock) {
			slot = ktap_cellp(t, &k);
			if (!slot || !*slot || (*slot)->type != KTAP_TSTAT)
				continue;
			cell = (*slot)->p;
			for (i = 0; i < pt->nbuckets; i++)
				bucket[i] += cell->bucket[i];
		}
	}
	return 0;
}

/* Zero @cell if it is a statistic of @pt. */
static void ktap_agg_zero(const struct ktap_ptable *pt,
			  struct ktap_value *cell)
{
	if (cell && cell->type == KTAP_TSTAT)
		memset(cell->p, 0, struct_size_t(struct ktap_agg_cell, bucket,
						 pt->nbuckets));
}

/**
 * ktap_ptable_clear - delete @key, or every key, of @pt on every CPU
 * @x: the run; the work is charged to its budget
 * @pt: the aggregation
 * @key: the key, or NULL for all
 *
 * The cells are zeroed in place, not unlinked: readers skip empty ones,
 * and a key seen again reuses its cell, so printing and clearing an
 * aggregation from a tick handler runs in constant memory.
 *
 * Return: 0, -EBUSY or the budget's error.
 */
int ktap_ptable_clear(struct ktap_exec *x, struct ktap_ptable *pt,
		      const struct ktap_value *key)
{
	struct ktap_value k, **slot;
	int err, cpu;
	u32 i;

	if (key) {
		/* a key that was never added (or cannot be one) is gone */
		if (ktap_key_norm(x->vm, key, &k, false))
			return 0;
	}
	for_each_possible_cpu(cpu) {
		struct ktap_table *t = pt->cpu[cpu];

		scoped_cond_guard(ktap_spin_try, return -EBUSY, &t->lock) {
			if (key) {
				slot = ktap_cellp(t, &k);
				ktap_agg_zero(pt, slot ? *slot : NULL);
				continue;
			}
			err = ktap_charge(x, ktap_table_span(t));
			if (err)
				return err;
			for (i = 0; t->hash && i < t->hash->cap; i++)
				ktap_agg_zero(pt, t->hash->n[i].cell);
			for (i = 0; t->arr && i < t->arr->cap; i++)
				ktap_agg_zero(pt, t->arr->cell[i]);
		}
	}
	return 0;
}

/**
 * ktap_ptable_get - s[key]: the aggregate of @key over all CPUs
 * @x: the run (the result is one of its short-lived objects)
 * @pt: ptable
 * @key: any value
 * @out: a statistic value (a fresh copy), or nil if never added
 *
 * Return: 0, -EINVAL, -ENOMEM or -EBUSY.
 */
int ktap_ptable_get(struct ktap_exec *x, struct ktap_ptable *pt,
		    const struct ktap_value *key, struct ktap_value *out)
{
	struct ktap_stat agg = {}, *st;
	struct ktap_vm *vm = x->vm;
	struct ktap_value k, **slot;
	int err, cpu;

	ktap_set_nil(out);
	err = ktap_key_norm(vm, key, &k, false);
	if (err)
		return err == -ENOENT ? 0 : err;
	for_each_possible_cpu(cpu) {
		struct ktap_table *t = pt->cpu[cpu];

		scoped_cond_guard(ktap_spin_try, return -EBUSY, &t->lock) {
			slot = ktap_cellp(t, &k);
			if (slot && *slot && (*slot)->type == KTAP_TSTAT)
				ktap_stat_merge(&agg, (*slot)->p);
		}
	}
	if (!agg.count)
		return 0;
	st = ktap_run_alloc(x, sizeof(*st));
	if (!st)
		return -ENOMEM;
	*st = agg;
	ktap_set_obj(out, KTAP_TSTAT, st);
	return 0;
}

/* Snapshot order of ptable entries: by key, so equal keys are adjacent. */
static int ktap_key_cmp(const struct ktap_value *a, const struct ktap_value *b);

static int ktap_pair_key_cmp(const void *pa, const void *pb)
{
	const struct ktap_pair *a = pa, *b = pb;

	return ktap_key_cmp(&a->key, &b->key);
}

/*
 * Copy the statistics of one CPU's part into @e/@st (room for @cap
 * more): the values, not pointers to cells other CPUs keep updating.
 */
static int ktap_ptable_collect(struct ktap_exec *x, struct ktap_table *t,
			       struct ktap_pair *e, struct ktap_stat *st,
			       u32 cap, u32 *n)
{
	u32 i;
	int err;

	scoped_cond_guard(ktap_spin_try, return -EBUSY, &t->lock) {
		err = ktap_charge(x, ktap_table_span(t));
		if (err)
			return err;
		for (i = 0; t->hash && i < t->hash->cap && *n < cap; i++) {
			struct ktap_node *node = &t->hash->n[i];
			struct ktap_value *cell = node->cell;

			if (!cell || cell->type != KTAP_TSTAT ||
			    !((struct ktap_stat *)cell->p)->count)
				continue;
			e[*n].key = node->key;
			st[*n] = *(struct ktap_stat *)cell->p;
			ktap_set_obj(&e[*n].val, KTAP_TSTAT, &st[*n]);
			(*n)++;
		}
		for (i = 0; t->arr && i < t->arr->cap && *n < cap; i++) {
			struct ktap_value *cell = t->arr->cell[i];

			if (!cell || cell->type != KTAP_TSTAT ||
			    !((struct ktap_stat *)cell->p)->count)
				continue;
			ktap_value_int(&e[*n].key, (s64)i + 1);
			st[*n] = *(struct ktap_stat *)cell->p;
			ktap_set_obj(&e[*n].val, KTAP_TSTAT, &st[*n]);
			(*n)++;
		}
	}
	return 0;
}

/**
 * ktap_ptable_iter - snapshot of @pt aggregated over CPUs, for pairs()
 * @x: the run; the work is charged to its budget
 * @pt: ptable
 * @err: set on failure
 *
 * Copies every CPU's statistics, sorts them by key and merges equal
 * keys: no table is built, and everything comes from ktap_run_alloc().
 * Keys added while the parts are copied may be missed.
 *
 * Return: an iterator whose values are statistics, or NULL.
 */
struct ktap_iter *ktap_ptable_iter(struct ktap_exec *x, struct ktap_ptable *pt,
				   int *err)
{
	struct ktap_stat *st;
	struct ktap_iter *it;
	u32 cap = 0, n = 0, i, out;
	int cpu;

	for_each_possible_cpu(cpu)
		cap += min_t(u32, READ_ONCE(pt->cpu[cpu]->count), U32_MAX - cap);
	*err = -ENOMEM;
	if (cap > (U32_MAX - sizeof(*it)) / (sizeof(it->e[0]) + sizeof(*st)))
		return NULL;
	it = ktap_run_alloc(x, struct_size(it, e, cap));
	st = ktap_run_alloc(x, (size_t)cap * sizeof(*st));
	if (!it || (cap && !st))
		return NULL;
	for_each_possible_cpu(cpu) {
		*err = ktap_ptable_collect(x, pt->cpu[cpu], it->e, st, cap, &n);
		if (*err)
			return NULL;
	}
	*err = ktap_charge(x, (u64)n * (ilog2(n | 1) + 1));
	if (*err)
		return NULL;
	sort(it->e, n, sizeof(it->e[0]), ktap_pair_key_cmp, NULL);
	for (i = 0, out = 0; i < n; i++) {
		if (out && !ktap_key_cmp(&it->e[out - 1].key, &it->e[i].key)) {
			ktap_stat_merge(it->e[out - 1].val.p, it->e[i].val.p);
			continue;
		}
		it->e[out++] = it->e[i];
	}
	it->n = out;
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
	const struct ktap_pair *a = pa, *b = pb;
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
 * @x: the run; the comparisons are charged to its budget
 * @it: iterator, not yet advanced
 *
 * Numbers (and statistics, by count) descending, ties by key ascending,
 * non-numeric values last. Uses lib/sort.c: no allocation, no recursion.
 *
 * Return: 0, or the runtime error of a budget overrun.
 */
int ktap_iter_sort(struct ktap_exec *x, struct ktap_iter *it)
{
	int err = ktap_charge(x, (u64)it->n * (ilog2(it->n | 1) + 1));

	if (!err)
		sort(it->e, it->n, sizeof(it->e[0]), ktap_node_cmp, NULL);
	return err;
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
