/* SPDX-License-Identifier: BSD-3-Clause */
/* Bus transports of the fpga driver: shared memory (the model). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "isth_fpga_if.h"
#include "fpga_bus.h"

static int
bus_shm_open(struct fpga_bus *bus, const char *name)
{
	uint64_t off, size, iova;
	struct stat st;
	void *map;
	int fd, rc;

	fd = shm_open(name, O_RDWR, 0);
	if (fd < 0)
		return errno == ENOENT ? -ENODEV : -errno;
	if (fstat(fd, &st) != 0) {
		rc = -errno;
		goto close_fd;
	}
	if ((uint64_t)st.st_size < ISTH_FPGA_BAR_SIZE) {
		rc = -ENODEV;
		goto close_fd;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		rc = -errno;
		goto close_fd;
	}
	close(fd);
	bus->map = map;
	bus->map_size = (size_t)st.st_size;
	bus->bar = map;
	if (fpga_rd(bus, ISTH_FPGA_REG_ID) != ISTH_FPGA_ID) {
		rc = -ENODEV;
		goto unmap;
	}
	off = fpga_rd(bus, ISTH_FPGA_REG_SHM_DMA_OFFSET);
	size = fpga_rd(bus, ISTH_FPGA_REG_SHM_DMA_SIZE);
	iova = fpga_rd(bus, ISTH_FPGA_REG_SHM_DMA_IOVA);
	if (off < ISTH_FPGA_BAR_SIZE || off > bus->map_size || size > bus->map_size - off ||
		size == 0 || iova == 0) {
		rc = -ENODEV;
		goto unmap;
	}
	bus->dma = (uint8_t *)map + off;
	bus->dma_size = size;
	bus->dma_iova = iova;
	return 0;
unmap:
	munmap(map, bus->map_size);
	memset(bus, 0, sizeof(*bus));
	return rc;
close_fd:
	close(fd);
	return rc;
}

/* "DDDD:BB:DD.F" */
static int
is_pci_addr(const char *s)
{
	return strlen(s) >= 7 && isxdigit((unsigned char)s[0]) && strchr(s, ':') != NULL &&
		strchr(s, '.') != NULL;
}

int
fpga_bus_open(struct fpga_bus *bus, const char *device)
{
	memset(bus, 0, sizeof(*bus));
	if (device == NULL || device[0] == '\0')
		return -EINVAL;
	if (device[0] == '/')
		return bus_shm_open(bus, device);
	if (is_pci_addr(device))
		/* vfio-pci transport: doc/fpga-interface.md "Host side". */
		return -ENOTSUP;
	return -EINVAL;
}

void
fpga_bus_close(struct fpga_bus *bus)
{
	if (bus == NULL || bus->map == NULL)
		return;
	munmap(bus->map, bus->map_size);
	memset(bus, 0, sizeof(*bus));
}
