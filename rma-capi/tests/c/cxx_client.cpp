// mpi.h from C++ (compiled with rmacxx, C++11, warnings as errors): MPI calls over
// std::vector buffers, a datatype chosen by a template, a window owned by an RAII
// class, MPI constants in constant expressions. Every rank adds vectors with
// MPI_Allreduce, then takes tickets from a counter on rank 0 with MPI_Fetch_and_op;
// rank 0 checks that the tickets are 0..N-1, each taken once. Exits 0 when every
// check held; prints what failed otherwise. Run with 2 or more ranks.
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <vector>

namespace {

int errs = 0;

void check(bool ok, const char *what, long long got = 0) {
    if (!ok) {
        errs++;
        std::printf("%s (%lld)\n", what, got);
    }
}

// MPI constants are constant expressions in C++ too
static_assert(MPI_SUCCESS == 0, "MPI_SUCCESS");
constexpr int kTickets = 16;
constexpr MPI_Datatype kCounterType = MPI_LONG_LONG;
constexpr MPI_Op kAdd = MPI_SUM;

const char *describe(int cls) {
    switch (cls) {
    case MPI_SUCCESS: return "ok";
    case MPI_ERR_RMA_SYNC: return "synchronization";
    case MPI_ERR_UNSUPPORTED_OPERATION: return "unsupported";
    default: return "other";
    }
}

template <typename T> struct Type;
template <> struct Type<int> { static MPI_Datatype get() { return MPI_INT; } };
template <> struct Type<double> { static MPI_Datatype get() { return MPI_DOUBLE; } };
template <> struct Type<long long> { static MPI_Datatype get() { return MPI_LONG_LONG; } };

template <typename T> std::vector<T> allreduce(const std::vector<T> &in, MPI_Op op) {
    std::vector<T> out(in.size());
    int rc = MPI_Allreduce(in.data(), out.data(), static_cast<int>(in.size()), Type<T>::get(), op,
                           MPI_COMM_WORLD);
    check(rc == MPI_SUCCESS, describe(rc), rc);
    return out;
}

// A counter of long longs on every rank, freed with its owner.
class Counter {
  public:
    Counter() {
        MPI_Win_allocate(sizeof(long long), sizeof(long long), MPI_INFO_NULL, MPI_COMM_WORLD, &base_,
                         &win_);
        *base_ = 0;
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_lock_all(0, win_);
    }
    ~Counter() {
        MPI_Win_unlock_all(win_);
        MPI_Win_free(&win_);
    }
    Counter(const Counter &) = delete;
    Counter &operator=(const Counter &) = delete;

    long long take(int rank) {
        long long one = 1, before = -1;
        MPI_Fetch_and_op(&one, &before, kCounterType, rank, 0, kAdd, win_);
        MPI_Win_flush(rank, win_);
        return before;
    }
    long long local() const { return *base_; }
    MPI_Win win() const { return win_; }

  private:
    long long *base_ = nullptr;
    MPI_Win win_ = MPI_WIN_NULL;
};

} // namespace

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    // vectors: element i is rank + i on every rank
    std::vector<int> mine(8);
    std::iota(mine.begin(), mine.end(), rank);
    std::vector<int> sum = allreduce(mine, MPI_SUM);
    for (int i = 0; i < 8; i++) check(sum[i] == size * i + size * (size - 1) / 2, "allreduce sum", sum[i]);
    std::vector<double> top = allreduce(std::vector<double>(3, rank * 0.5), MPI_MAX);
    check(top == std::vector<double>(3, (size - 1) * 0.5), "allreduce max", static_cast<long long>(top[0]));

    // tickets from rank 0's counter
    std::vector<long long> tickets;
    {
        Counter c;
        for (int k = 0; k < kTickets; k++) tickets.push_back(c.take(0));
        check(std::is_sorted(tickets.begin(), tickets.end()), "a rank's tickets increase");
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Win_sync(c.win());
        if (rank == 0) check(c.local() == static_cast<long long>(kTickets) * size, "counter", c.local());
        MPI_Barrier(MPI_COMM_WORLD);
    }
    std::vector<long long> all(rank == 0 ? static_cast<size_t>(kTickets) * size : 0);
    MPI_Gather(tickets.data(), kTickets, MPI_LONG_LONG, all.data(), kTickets, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        std::sort(all.begin(), all.end());
        for (size_t i = 0; i < all.size(); i++) check(all[i] == static_cast<long long>(i), "ticket", all[i]);
    }

    MPI_Finalize();
    if (errs) std::printf("rank %d: %d checks failed\n", rank, errs);
    return errs ? 1 : 0;
}
