/* SPDX-License-Identifier: BSD-3-Clause */
#ifndef ISTH_FPGA_BUS_H
#define ISTH_FPGA_BUS_H

/*
 * The bus layer of the fpga driver: how the driver reaches BAR0 and the
 * DMA memory the device reads and writes. Everything above it (rings,
 * descriptors, registers) is transport-independent.
 *
 * Two transports are defined (doc/fpga-interface.md, "Host side"):
 * - shm: a POSIX shared-memory object made by the device model; BAR0 at
 *   offset 0, the DMA window after it (fpga_bus_shm.c). This is what runs.
 * - vfio: BAR0 mmapped from a vfio-pci device region and a hugepage
 *   memzone mapped into the IOMMU with rte_vfio_container_dma_map(). Not
 *   implemented (no device here): fpga_bus_open() refuses PCI addresses
 *   with -ENOTSUP; the steps are in the document.
 */

#include <stddef.h>
#include <stdint.h>

struct fpga_bus {
	uint64_t *bar; /* BAR0, ISTH_FPGA_BAR_SIZE bytes */
	uint8_t *dma; /* DMA memory, host virtual address */
	uint64_t dma_iova; /* IOVA of dma[0] */
	uint64_t dma_size; /* bytes */
	void *map; /* shm: the whole object */
	size_t map_size;
};

/*
 * Open @device: a shared-memory name ("/isthmus-fpga0") or a PCI address
 * ("0000:3b:00.0", refused). @return 0, -ENODEV (absent or not an isthmus
 * device), -ENOTSUP (vfio transport), -EINVAL, or -errno.
 */
int fpga_bus_open(struct fpga_bus *bus, const char *device);

/* Unmap; a closed or zeroed bus is fine. */
void fpga_bus_close(struct fpga_bus *bus);

static inline uint64_t
fpga_rd(const struct fpga_bus *bus, uint32_t off)
{
	return __atomic_load_n(&bus->bar[off / 8], __ATOMIC_ACQUIRE);
}

/* Release: every store to DMA memory before it (descriptors, buffers) is
 * visible to the device once it sees this register write (on PCIe, the
 * posted write follows the earlier ones; rte_io_wmb() is a compiler
 * barrier on x86). */
static inline void
fpga_wr(struct fpga_bus *bus, uint32_t off, uint64_t v)
{
	__atomic_store_n(&bus->bar[off / 8], v, __ATOMIC_RELEASE);
}

static inline uint64_t
fpga_iova(const struct fpga_bus *bus, const void *va)
{
	return bus->dma_iova + (uint64_t)((const uint8_t *)va - bus->dma);
}

#endif /* ISTH_FPGA_BUS_H */
