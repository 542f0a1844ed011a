/* SPDX-License-Identifier: BSD-3-Clause */
/* A pcapng file of dropped frames (pcapng_write.h). */
#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "pcapng_write.h"
#include "shp_stats.h"

#define BT_SHB 0x0A0D0D0Au
#define BT_IDB 0x00000001u
#define BT_EPB 0x00000006u
#define BYTE_ORDER_MAGIC 0x1A2B3C4Du
#define LINKTYPE_ETHERNET 1

#define OPT_END 0
#define OPT_COMMENT 1
#define OPT_SHB_USERAPPL 4
#define OPT_IF_NAME 2
#define OPT_IF_TSRESOL 9

#define PAD4(n) (((n) + 3u) & ~3u)

/* the longest comment: cause, class and numbers */
#define COMMENT_MAX 160
#define IOBUF (1u << 20)

static void
put(struct shp_pcapng *w, const void *p, size_t n)
{
	static const uint8_t zero[4];

	if (w->error)
		return;
	if (p == NULL)
		p = zero;
	if (n > 0 && fwrite(p, 1, n, w->f) != n)
		w->error = true;
	w->bytes += n;
}

static void
put32(struct shp_pcapng *w, uint32_t v)
{
	put(w, &v, 4);
}

/* An option: code, length, value padded. */
static void
put_opt(struct shp_pcapng *w, uint16_t code, const void *v, uint16_t len)
{
	uint16_t h[2] = { code, len };

	put(w, h, 4);
	put(w, v, len);
	put(w, NULL, PAD4(len) - len);
}

static uint32_t
opt_size(size_t len)
{
	return 4 + PAD4((uint32_t)len);
}

int
shp_pcapng_comment(const struct shp_caprec *rec, char *buf, size_t len)
{
	const char *cause = shp_drop_names[rec->slot];
	int n;

	n = snprintf(buf, len, "cause=%s port=%u shard=%u",
		     cause != NULL ? cause : "unknown", rec->port, rec->shard);
	if (rec->cls[0] != '\0' && n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - n, " class=%s", rec->cls);
	if (rec->band != SHP_CAP_NO_BAND && n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - n, " band=%u", rec->band);
	return n;
}

static void
write_shb(struct shp_pcapng *w)
{
	static const char app[] = "dpdk-shaper drop capture";
	uint32_t len = 28 + opt_size(sizeof(app) - 1) + 4;
	uint16_t ver[2] = { 1, 0 };
	int64_t section = -1;

	put32(w, BT_SHB);
	put32(w, len);
	put32(w, BYTE_ORDER_MAGIC);
	put(w, ver, 4);
	put(w, &section, 8);
	put_opt(w, OPT_SHB_USERAPPL, app, sizeof(app) - 1);
	put_opt(w, OPT_END, NULL, 0);
	put32(w, len);
}

static void
write_idb(struct shp_pcapng *w, uint16_t port)
{
	char name[16];
	uint8_t tsresol = 9;    /* 10^-9 s: nanoseconds */
	uint16_t lt[2] = { LINKTYPE_ETHERNET, 0 };
	int nl = snprintf(name, sizeof(name), "port %u", port);
	uint32_t len = 20 + opt_size((size_t)nl) + opt_size(1) + 4;

	put32(w, BT_IDB);
	put32(w, len);
	put(w, lt, 4);
	put32(w, w->snaplen);
	put_opt(w, OPT_IF_NAME, name, (uint16_t)nl);
	put_opt(w, OPT_IF_TSRESOL, &tsresol, 1);
	put_opt(w, OPT_END, NULL, 0);
	put32(w, len);
}

int
shp_pcapng_open(struct shp_pcapng *w, const char *path, uint16_t nb_ifs,
		uint32_t snaplen, uint64_t limit, bool fresh, char *err,
		size_t errlen)
{
	struct stat st;
	uint16_t i;
	int fd;

	memset(w, 0, sizeof(*w));
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		snprintf(err, errlen, "%s: is a directory", path);
		return -1;
	}
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC |
		  (fresh ? O_EXCL | O_NOFOLLOW : O_TRUNC), 0640);
	if (fd < 0 || (w->f = fdopen(fd, "wb")) == NULL) {
		if (fresh && errno == EEXIST)
			snprintf(err, errlen, "%s: exists (a capture writes "
				 "a new file: remove it or name another)",
				 path);
		else
			snprintf(err, errlen, "%s: cannot write it: %s", path,
				 strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	w->blk = malloc(28 + PAD4(snaplen) + 4 + COMMENT_MAX + 8);
	w->iobuf = malloc(IOBUF);
	if (w->blk == NULL || w->iobuf == NULL) {
		snprintf(err, errlen, "%s: out of memory", path);
		fclose(w->f);
		free(w->blk);
		free(w->iobuf);
		memset(w, 0, sizeof(*w));
		unlink(path);
		return -1;
	}
	/* large writes: a syscall per megabyte, not per frame */
	setvbuf(w->f, w->iobuf, _IOFBF, IOBUF);
	w->limit = limit;
	w->snaplen = snaplen;
	shp_capture_ran = true;
	w->nb_ifs = nb_ifs;
	write_shb(w);
	for (i = 0; i < nb_ifs; i++)
		write_idb(w, i);
	return 0;
}

/* rec's comment, made again only when what it says changed */
static uint32_t
comment_of(struct shp_pcapng *w, const struct shp_caprec *rec)
{
	struct shp_caprec *k = &w->key;
	int cl;

	if (w->comment_len != 0 && k->slot == rec->slot &&
	    k->port == rec->port && k->shard == rec->shard &&
	    k->band == rec->band && strcmp(k->cls, rec->cls) == 0)
		return w->comment_len;
	cl = shp_pcapng_comment(rec, w->comment, sizeof(w->comment));
	w->comment_len = (uint32_t)RTE_MIN((size_t)RTE_MAX(cl, 0),
					   sizeof(w->comment) - 1);
	k->slot = rec->slot;
	k->port = rec->port;
	k->shard = rec->shard;
	k->band = rec->band;
	memcpy(k->cls, rec->cls, sizeof(k->cls));
	return w->comment_len;
}

static inline uint8_t *
put_u32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
	return p + 4;
}

bool
shp_pcapng_write(struct shp_pcapng *w, const struct shp_caprec *rec)
{
	uint32_t clen = comment_of(w, rec);
	uint32_t caplen = RTE_MIN((uint32_t)rec->caplen, w->snaplen);
	uint32_t len = 28 + PAD4(caplen) + opt_size(clen) + 4 + 4;
	uint64_t ts = (uint64_t)((int64_t)rec->time_ns + w->ts_offset);
	uint16_t oh[2] = { OPT_COMMENT, (uint16_t)clen };
	uint8_t *p = w->blk;

	if (w->full || w->error || rec->port >= w->nb_ifs ||
	    w->bytes + len > w->limit) {
		w->full |= !w->error && w->bytes + len > w->limit;
		w->lost++;
		if (rec->port < SHP_MAX_PORTS)
			__atomic_store_n(&shp_capture_counts[rec->port].lost,
					 shp_capture_counts[rec->port].lost + 1,
					 __ATOMIC_RELAXED);
		return false;
	}
	p = put_u32(p, BT_EPB);
	p = put_u32(p, len);
	p = put_u32(p, rec->port);
	p = put_u32(p, (uint32_t)(ts >> 32));
	p = put_u32(p, (uint32_t)ts);
	p = put_u32(p, caplen);
	p = put_u32(p, rec->orig_len);
	memcpy(p, rec->data, caplen);
	memset(p + caplen, 0, PAD4(caplen) - caplen);
	p += PAD4(caplen);
	memcpy(p, oh, 4);
	memcpy(p + 4, w->comment, clen);
	memset(p + 4 + clen, 0, PAD4(clen) - clen);
	p += 4 + PAD4(clen);
	p = put_u32(p, 0);     /* opt_endofopt */
	p = put_u32(p, len);
	put(w, w->blk, (size_t)(p - w->blk));
	if (w->error)
		return false;
	w->written++;
	__atomic_store_n(&shp_capture_counts[rec->port].captured,
			 shp_capture_counts[rec->port].captured + 1,
			 __ATOMIC_RELAXED);
	return true;
}

int
shp_pcapng_close(struct shp_pcapng *w)
{
	int rc = 0;

	if (w->f == NULL)
		return 0;
	if (fflush(w->f) != 0 || ferror(w->f) || w->error)
		rc = -1;
	if (fclose(w->f) != 0)
		rc = -1;
	w->f = NULL;
	free(w->blk);
	free(w->iobuf);
	w->blk = NULL;
	w->iobuf = NULL;
	return rc;
}
