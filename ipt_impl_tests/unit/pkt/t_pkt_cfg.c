/* CPU errata, --cpu parsing, last-IP tracking. */
#include "ipt.h"
#include "check.h"

#include <string.h>

static uint32_t errata_bits(const struct pt_errata *e)
{
	return (uint32_t) (e->bdm70 | e->bdm64 << 1 | e->skd007 << 2 |
			   e->skd022 << 3 | e->skd010 << 4 | e->skl014 << 5 |
			   e->apl12 << 6 | e->apl11 << 7 | e->skl168 << 8 |
			   e->skz84 << 9);
}

enum {
	BDM70 = 1 << 0, BDM64 = 1 << 1, SKD007 = 1 << 2, SKD022 = 1 << 3,
	SKD010 = 1 << 4, SKL014 = 1 << 5, APL12 = 1 << 6, APL11 = 1 << 7,
	SKL168 = 1 << 8, SKZ84 = 1 << 9
};

static void check_cpu(uint16_t family, uint8_t model, int ret, uint32_t bits)
{
	struct pt_cpu cpu;
	struct pt_errata errata;

	cpu.vendor = pcv_intel;
	cpu.family = family;
	cpu.model = model;
	cpu.stepping = 3;
	memset(&errata, 0xff, sizeof(errata));
	CHECK_EQ(pt_cpu_errata(&errata, &cpu), ret);
	if (errata_bits(&errata) != bits)
		printf("     cpu %x/%x\n", family, model);
	CHECK_EQ(errata_bits(&errata), bits);
	CHECK_EQ(errata.reserved[14], 0);
}

static void test_errata(void)
{
	struct pt_cpu cpu;
	struct pt_errata errata;

	check_cpu(6, 0x3d, 0, BDM70 | BDM64);
	check_cpu(6, 0x56, 0, BDM70 | BDM64);
	check_cpu(6, 0x4e, 0, BDM70 | SKD007 | SKD022 | SKD010 | SKL014 |
				      SKL168);
	check_cpu(6, 0xa6, 0, BDM70 | SKD007 | SKD022 | SKD010 | SKL014 |
				      SKL168);
	check_cpu(6, 0x55, 0, BDM70 | SKL014 | SKD022 | SKZ84);
	check_cpu(6, 0x6c, 0, BDM70 | SKL014 | SKD022 | SKZ84);
	check_cpu(6, 0x8f, 0, BDM70 | SKD022 | SKZ84);
	check_cpu(6, 0xae, 0, BDM70 | SKD022 | SKZ84);
	check_cpu(0x13, 0x01, 0, BDM70 | SKD022 | SKZ84);
	check_cpu(6, 0x7e, 0, BDM70 | SKL014 | SKD022);
	check_cpu(6, 0xa8, 0, BDM70 | SKL014 | SKD022);
	check_cpu(6, 0x97, 0, BDM70 | SKD022 | APL11);
	check_cpu(6, 0xd5, 0, BDM70 | SKD022 | APL11);
	check_cpu(0x12, 0x03, 0, BDM70 | SKD022 | APL11);
	check_cpu(6, 0x5c, 0, APL12 | APL11);
	check_cpu(6, 0x5f, 0, APL12 | APL11);
	check_cpu(6, 0x7a, 0, APL11);
	check_cpu(6, 0xdd, 0, APL11);

	check_cpu(6, 0x3c, -pte_bad_cpu, 0);
	check_cpu(6, 0x00, -pte_bad_cpu, 0);
	check_cpu(0x12, 0x02, -pte_bad_cpu, 0);
	check_cpu(0x13, 0x02, -pte_bad_cpu, 0);
	check_cpu(0xf, 0x3d, -pte_bad_cpu, 0);
	check_cpu(0x106, 0x3d, -pte_bad_cpu, 0);

	cpu.vendor = pcv_unknown;
	cpu.family = 6;
	cpu.model = 0x3d;
	cpu.stepping = 0;
	memset(&errata, 0xff, sizeof(errata));
	CHECK_EQ(pt_cpu_errata(&errata, &cpu), -pte_bad_cpu);
	CHECK_EQ(errata_bits(&errata), 0);
	CHECK_EQ(pt_cpu_errata(NULL, &cpu), -pte_invalid);
	CHECK_EQ(pt_cpu_errata(&errata, NULL), -pte_invalid);
}

static void check_parse(const char *s, int ret, int family, int model,
			int stepping)
{
	struct pt_cpu cpu;

	memset(&cpu, 0x5a, sizeof(cpu));
	if (pt_errcode(ipt_cpu_parse(&cpu, s)) != pt_errcode(ret))
		printf("     \"%s\"\n", s);
	CHECK_EQ(ipt_cpu_parse(&cpu, s), ret);
	if (ret < 0)
		return;
	CHECK_EQ(cpu.vendor, pcv_intel);
	CHECK_EQ(cpu.family, family);
	CHECK_EQ(cpu.model, model);
	CHECK_EQ(cpu.stepping, stepping);
}

static void test_parse(void)
{
	struct pt_cpu cpu;

	check_parse("6/62", 0, 6, 62, 0);
	check_parse("6/62/3", 0, 6, 62, 3);
	check_parse("0x6/0x3e/0xa", 0, 6, 0x3e, 10);
	check_parse("06/076/07", 0, 6, 076, 7);
	check_parse("6/62/", 0, 6, 62, 0);
	check_parse(" 6/ 62/ 1", 0, 6, 62, 1);
	check_parse("+6/+62", 0, 6, 62, 0);
	check_parse("65535/255/255", 0, 65535, 255, 255);
	check_parse("-0/0", 0, 0, 0, 0);

	check_parse("", -pte_invalid, 0, 0, 0);
	check_parse("6", -pte_invalid, 0, 0, 0);
	check_parse("6/", -pte_invalid, 0, 0, 0);
	check_parse("/62", -pte_invalid, 0, 0, 0);
	check_parse("6:62", -pte_invalid, 0, 0, 0);
	check_parse("6/62x", -pte_invalid, 0, 0, 0);
	check_parse("6/62/x", -pte_invalid, 0, 0, 0);
	check_parse("6/62/1/2", -pte_invalid, 0, 0, 0);
	check_parse("6/62/1 ", -pte_invalid, 0, 0, 0);
	check_parse("65536/1", -pte_invalid, 0, 0, 0);
	check_parse("6/256", -pte_invalid, 0, 0, 0);
	check_parse("6/1/256", -pte_invalid, 0, 0, 0);
	check_parse("-1/2", -pte_invalid, 0, 0, 0);
	check_parse("6/-2", -pte_invalid, 0, 0, 0);
	check_parse("6/08", -pte_invalid, 0, 0, 0);
	check_parse("0x/1", -pte_invalid, 0, 0, 0);
	check_parse("99999999999999999999/1", -pte_invalid, 0, 0, 0);
	CHECK_EQ(ipt_cpu_parse(NULL, "6/62"), -pte_invalid);
	CHECK_EQ(ipt_cpu_parse(&cpu, NULL), -pte_invalid);
}

static void update(struct ipt_last_ip *last_ip, enum pt_ip_compression ipc,
		   uint64_t ip, int ret)
{
	struct pt_packet_ip packet;

	packet.ipc = ipc;
	packet.ip = ip;
	CHECK_EQ(ipt_last_ip_update_ip(last_ip, &packet, NULL), ret);
}

static void test_last_ip(void)
{
	struct ipt_last_ip last_ip;
	struct pt_packet_ip packet;
	uint64_t ip;

	ipt_last_ip_init(&last_ip);
	ip = 1;
	CHECK_EQ(ipt_last_ip_query(&ip, &last_ip), -pte_noip);
	CHECK_EQ(ip, 0);
	CHECK_EQ(ipt_last_ip_query(NULL, &last_ip), -pte_noip);

	/* Suppressed before any IP: still no IP. */
	update(&last_ip, pt_ipc_suppressed, 0, 0);
	CHECK_EQ(ipt_last_ip_query(&ip, &last_ip), -pte_noip);

	update(&last_ip, pt_ipc_update_16, 0xffffffffffff1234ull, 0);
	CHECK_EQ(ipt_last_ip_query(&ip, &last_ip), 0);
	CHECK_EQ(ip, 0x1234);

	update(&last_ip, pt_ipc_full, 0xfedcba9876543210ull, 0);
	CHECK_EQ(ipt_last_ip_query(&ip, &last_ip), 0);
	CHECK_EQ(ip, 0xfedcba9876543210ull);

	update(&last_ip, pt_ipc_update_16, 0xaaaa, 0);
	CHECK_EQ(ipt_last_ip_query(&ip, &last_ip), 0);
	CHECK_EQ(ip, 0xfedcba987654aaaaull);

	update(&last_ip, pt_ipc_update_32, 0x11112222bbbbbbbbull, 0);
	CHECK_EQ(ipt_last_ip_query(&ip, &last_ip), 0);
	CHECK_EQ(ip, 0xfedcba98bbbbbbbbull);

	update(&last_ip, pt_ipc_update_48, 0x1111ccccccccccccull, 0);
	CHECK_EQ(ipt_last_ip_query(&ip, &last_ip), 0);
	CHECK_EQ(ip, 0xfedcccccccccccccull);

	update(&last_ip, pt_ipc_suppressed, 0x5555, 0);
	ip = 1;
	CHECK_EQ(ipt_last_ip_query(&ip, &last_ip), -pte_ip_suppressed);
	CHECK_EQ(ip, 0);

	/* The next update lifts suppression; sext-48 extends bit 47. */
	update(&last_ip, pt_ipc_sext_48, 0x0000800000001000ull, 0);
	CHECK_EQ(ipt_last_ip_query(&ip, &last_ip), 0);
	CHECK_EQ(ip, 0xffff800000001000ull);
	update(&last_ip, pt_ipc_sext_48, 0xffff7fffffff1000ull, 0);
	CHECK_EQ(ipt_last_ip_query(&ip, &last_ip), 0);
	CHECK_EQ(ip, 0x00007fffffff1000ull);

	/* Reserved compressions change nothing. */
	update(&last_ip, (enum pt_ip_compression) 5, 0x1, -pte_bad_packet);
	update(&last_ip, (enum pt_ip_compression) 7, 0x1, -pte_bad_packet);
	CHECK_EQ(ipt_last_ip_query(&ip, &last_ip), 0);
	CHECK_EQ(ip, 0x00007fffffff1000ull);

	packet.ipc = pt_ipc_full;
	packet.ip = 0;
	CHECK_EQ(ipt_last_ip_update_ip(NULL, &packet, NULL), -pte_invalid);
	CHECK_EQ(ipt_last_ip_update_ip(&last_ip, NULL, NULL), -pte_invalid);
	CHECK_EQ(ipt_last_ip_query(&ip, NULL), -pte_invalid);
	ipt_last_ip_init(NULL);
	ipt_last_ip_init(&last_ip);
	CHECK_EQ(ipt_last_ip_query(&ip, &last_ip), -pte_noip);
}

int main(void)
{
	test_errata();
	test_parse();
	test_last_ip();
	return check_done();
}
